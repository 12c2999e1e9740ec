package predicate

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

func TestAccessAllows(t *testing.T) {
	t.Parallel()
	rec := &store.Record{Type: "doc", ID: "d1", Version: 3,
		Properties: json.RawMessage(`{"owner":"ann","members":["ann","bob"],"public":false}`)}
	tests := []struct {
		src  string
		user string
		want bool
	}{
		{`user in entity.properties.members`, "bob", true},
		{`user in entity.properties.members`, "cy", false},
		{`user in entity.properties.members`, "", false},
		{`entity.properties.owner == user || entity.properties.public`, "ann", true},
		{`entity.properties.owner == user || entity.properties.public`, "bob", false},
		{`user in entity.properties.missing`, "bob", false}, // a runtime error denies
		{`entity.id == "d1"`, "", true},
		{`user == ""`, "", true},
		{`entity.properties.public`, "ann", false},
	}
	for _, tt := range tests {
		a, err := CompileAccess("access.read", tt.src)
		if err != nil {
			t.Fatalf("CompileAccess(%q): %v", tt.src, err)
		}
		if got := a.AllowsRecord(rec, tt.user); got != tt.want {
			t.Errorf("%q for %q = %v, want %v", tt.src, tt.user, got, tt.want)
		}
	}
}

func TestCompileAccessRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src     string
		wantPos bool
	}{
		{``, false},
		{`user in`, true},
		{`user + 1`, true},        // string + int does not type-check
		{`row.type == "a"`, true}, // row is not in scope
		{`user`, false},           // a string, not a bool
		{`entity.properties.x +`, true},
		{`entity.properties.l.all(x, entity.properties.l.all(y, entity.properties.l.all(z, x == y)))`, false}, // static cost
	}
	for _, tt := range tests {
		_, err := CompileAccess("access.read", tt.src)
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Code != problem.BadRequest || pe.Details["field"] != "access.read" {
			t.Errorf("CompileAccess(%q) = %v, want bad_request on access.read", tt.src, err)
			continue
		}
		if _, ok := pe.Details["position"]; ok != tt.wantPos {
			t.Errorf("CompileAccess(%q): position given %v, want %v (%v)", tt.src, ok, tt.wantPos, pe)
		}
	}
}
