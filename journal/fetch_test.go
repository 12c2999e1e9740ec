package journal

import (
	"slices"
	"testing"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// TestInitialFetchMatchesSession: the fetch shows every readable entity as
// of the session's position (later changes as they stood then), and the
// journal read from the session's cursor brings the rest: together they
// rebuild exactly what the user may read.
func TestInitialFetchMatchesSession(t *testing.T) {
	forEachDriver(t, Options{}, func(e *env) {
		t := e.t
		e.write(put("doc", "d1", `{"members":["alice"],"v":1}`))
		e.write(put("doc", "d2", `{"members":["bob"]}`))
		e.write(put("note", "n1", `{}`), put("note", "n2", `{}`), put("note", "n3", `{}`))
		e.write(put("secret", "s1", `{}`))
		e.write(put("note", "n4", `{}`))
		e.write(del("note", "n4"))
		e.clock.Advance(10 * e.svc.opts.SafeWindow)
		ses := e.session(alice())
		e.write(patch("doc", "d1", `{"v":2}`))
		e.write(patch("doc", "d2", `{"members":["alice"]}`))
		e.write(del("note", "n2"))
		e.write(put("note", "n5", `{}`))
		recs := e.fetchAll(alice(), ses.FetchToken, 2)
		var got []string
		for _, f := range recs {
			got = append(got, f.Type+"/"+f.ID+"@"+js(f.Card.Version))
			if f.Kind != Object || f.Card.Type != f.Type || f.Card.ID != f.ID {
				t.Fatalf("fetch record %s", js(f))
			}
		}
		want := []string{"doc/d1@1", "note/n1@3", "note/n2@4", "note/n3@5"}
		if !slices.Equal(got, want) {
			t.Fatalf("fetch %v, want %v", got, want)
		}
		r := newReplica(t)
		r.fetched(recs)
		e.settle()
		for _, p := range e.readAll(alice(), ses.Cursor, 0) {
			r.apply(p)
		}
		if got, want := r.keys(), e.truth(alice()); !slices.Equal(got, want) {
			t.Fatalf("rebuilt %v, truth %v", got, want)
		}
		// A type allow-list narrows the walk to its types.
		notes := alice()
		notes.Types = []string{"note", "a-missing-type"}
		if got := e.fetchAll(notes, ses.FetchToken, 0); len(got) != 3 || got[0].ID != "n1" || got[2].ID != "n3" {
			t.Fatalf("notes only: %s", js(got))
		}
	})
}

// TestFetchBadInput: a foreign, damaged or missing fetch token and a
// foreign after are bad_request.
func TestFetchBadInput(t *testing.T) {
	forEachDriver(t, Options{}, func(e *env) {
		t := e.t
		e.write(put("note", "n1", `{}`), put("note", "n2", `{}`))
		e.clock.Advance(10 * e.svc.opts.SafeWindow)
		ses := e.session(alice())
		other := e.session(alice())
		p, err := e.svc.Fetch(e.ctx, FetchParams{Space: "s", Client: alice(), Token: other.FetchToken, Limit: 1})
		if err != nil || p.Next == nil {
			t.Fatalf("fetch: %v %s", err, js(p))
		}
		bob := Client{User: "bob", Application: "mail", Reader: members{"bob"}}
		for name, fp := range map[string]FetchParams{
			"missing":       {Space: "s", Client: alice()},
			"another user":  {Space: "s", Client: bob, Token: ses.FetchToken},
			"another space": {Space: "other", Client: alice(), Token: ses.FetchToken},
			"a cursor":      {Space: "s", Client: alice(), Token: ses.Cursor},
			"damaged":       {Space: "s", Client: alice(), Token: ses.FetchToken[:20]},
			"foreign after": {Space: "s", Client: alice(), Token: ses.FetchToken, After: *p.Next},
			"bad after":     {Space: "s", Client: alice(), Token: ses.FetchToken, After: "x"},
			"limit":         {Space: "s", Client: alice(), Token: ses.FetchToken, Limit: 501},
		} {
			_, err := e.svc.Fetch(e.ctx, fp)
			if problem.CodeOf(err) != problem.BadRequest {
				t.Errorf("%s: err %v, want bad_request", name, err)
			}
		}
	})
}

// TestStateCheck: present (with version), gone (never existed or deleted)
// and hidden (exists, not readable: no content), in request order; too
// many or bad ids are bad_request.
func TestStateCheck(t *testing.T) {
	forEachDriver(t, Options{}, func(e *env) {
		t := e.t
		e.write(put("doc", "d1", `{"members":["alice"]}`)) // 1
		e.write(put("doc", "d2", `{"members":["bob"]}`))   // 2
		e.write(put("note", "n1", `{}`))                   // 3
		e.write(del("note", "n1"))                         // 4
		ids := []store.EntityKey{{Type: "note", ID: "n1"}, {Type: "doc", ID: "d2"}, {Type: "doc", ID: "d1"}, {Type: "doc", ID: "nope"}, {Type: "secret", ID: "x"}}
		res, err := e.svc.State(e.ctx, "s", alice(), ids)
		if err != nil {
			t.Fatal(err)
		}
		want := `[{"type":"note","id":"n1","state":"gone","version":4},{"type":"doc","id":"d2","state":"hidden"},` +
			`{"type":"doc","id":"d1","state":"present","version":1},{"type":"doc","id":"nope","state":"gone"},{"type":"secret","id":"x","state":"gone"}]`
		if js(res) != want {
			t.Fatalf("state\n got %s\nwant %s", js(res), want)
		}
		many := make([]store.EntityKey, MaxStateIDs+1)
		for i := range many {
			many[i] = store.EntityKey{Type: "doc", ID: "d1"}
		}
		for name, ids := range map[string][]store.EntityKey{
			"too many": many, "bad type": {{Type: "Bad Type", ID: "x"}}, "bad id": {{Type: "doc", ID: "a/b"}}, "empty id": {{Type: "doc"}},
		} {
			if _, err := e.svc.State(e.ctx, "s", alice(), ids); problem.CodeOf(err) != problem.BadRequest {
				t.Errorf("%s: err %v, want bad_request", name, err)
			}
		}
		if res, err := e.svc.State(e.ctx, "s", alice(), many[:MaxStateIDs]); err != nil || len(res) != MaxStateIDs {
			t.Fatalf("1000 ids: %v", err)
		}
	})
}
