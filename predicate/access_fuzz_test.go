package predicate

import (
	"encoding/json"
	"testing"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// FuzzCompileAccess: any access rule source either compiles, and then
// evaluates on any record and user without panicking, or is a bad_request
// naming access.read.
func FuzzCompileAccess(f *testing.F) {
	for _, seed := range []struct{ src, props, user string }{
		{`user in entity.properties.members`, `{"members":["ann"]}`, "ann"},
		{`entity.properties.owner == user || entity.properties.public == true`, `{"owner":"bob","public":true}`, ""},
		{`user == "" || user in entity.properties.readers`, `{}`, "x"},
		{`entity.links.exists(l, l.rel == "owner" && l.target.id == user)`, `{}`, "u"},
		{`user in`, `{}`, ""},
		{`size(user) > 2`, `[]`, "abc"},
		{`entity.properties.n / 0 == 1`, `{"n":1}`, ""},
	} {
		f.Add(seed.src, seed.props, seed.user)
	}
	f.Fuzz(func(t *testing.T, src, props, user string) {
		a, err := CompileAccess("access.read", src)
		if err != nil {
			if problem.CodeOf(err) != problem.BadRequest {
				t.Fatalf("CompileAccess(%q) = %v, want bad_request", src, err)
			}
			return
		}
		rec := &store.Record{Type: "doc", ID: "d1", Version: 1, Links: []store.Link{{Rel: "owner", Target: store.EntityKey{Type: "user", ID: user}}}}
		if json.Valid([]byte(props)) {
			rec.Properties = json.RawMessage(props)
		}
		_ = a.AllowsRecord(rec, user)
	})
}
