package journal

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// inject appends a commit straight through the store, as a newer (or
// broken) version of eddy could have written it, and returns its seq.
func (e *env) inject(op string, changes ...store.Change) int64 {
	e.t.Helper()
	tx, err := e.st.WriteBegin(e.ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(e.ctx) }()
	seq := tx.Space().Head + 1
	var recs []store.Record
	for i := range changes {
		changes[i].Ordinal, changes[i].Version = i, seq
		if a := changes[i].After; a != nil {
			a.Version = seq
			recs = append(recs, *a)
		}
	}
	c := store.Commit{Row: store.Row{Seq: seq, TS: e.clock.Now().UTC(), Actor: "owner", Op: op, Type: changes[0].Type, EntityID: changes[0].ID,
		Payload: json.RawMessage(`{}`)}, Changes: changes, Provenance: store.Provenance{Actor: "owner", Via: "api"}}
	if err := tx.Append(e.ctx, c, recs); err != nil {
		e.t.Fatalf("append %s: %v", op, err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	return seq
}

func (e *env) record(typ, id string) *store.Record {
	e.t.Helper()
	r, err := e.st.EntityGet(e.ctx, "s", store.EntityKey{Type: typ, ID: id})
	if err != nil {
		e.t.Fatal(err)
	}
	return &r
}

func card(r *store.Record, props string) *store.Record {
	c := *r
	c.Properties = json.RawMessage(props)
	return &c
}

// TestRecordUnreadable: commits this binary cannot describe (an unknown
// op, an unknown change kind, a deletion under an op with no tombstone
// reason), as a rolling deploy writes them, are RECORD_UNREADABLE
// warnings naming seq, type and id; the page forms round them, the
// position moves past them, and an unreadable change the user cannot see
// warns nobody.
func TestRecordUnreadable(t *testing.T) {
	forEachDriver(t, Options{}, func(e *env) {
		t := e.t
		ses := e.session(alice())
		e.write(put("doc", "d1", `{"members":["alice"]}`), put("doc", "d2", `{"members":["bob"]}`)) // 1, 2
		d1, d2 := e.record("doc", "d1"), e.record("doc", "d2")
		op := e.inject("frobnicate", store.Change{Kind: store.ChangeUpdated, Type: "doc", ID: "d1", Before: d1, After: card(d1, `{"members":["alice"],"f":1}`)})
		hidden := e.inject("frobnicate", store.Change{Kind: store.ChangeUpdated, Type: "doc", ID: "d2", Before: d2, After: card(d2, `{"members":["bob"],"f":1}`)})
		kind := e.inject("patch", store.Change{Kind: "archived", Type: "doc", ID: "d1", Before: d1, After: card(d1, `{"members":["alice"],"f":2}`)})
		reason := e.inject("put", store.Change{Kind: store.ChangeDeleted, Type: "doc", ID: "d1", Before: card(d1, `{"members":["alice"],"f":2}`)})
		last := e.write(put("note", "n1", `{}`))
		e.settle()
		p := e.read(alice(), ses.Cursor, 2)
		if got := kinds(p.Records); !slices.Equal(got, []string{"object doc/d1@1", "object note/n1@7"}) {
			t.Fatalf("records %v", got)
		}
		want := []Warning{{RecordUnreadable, op, "doc", "d1"}, {RecordUnreadable, kind, "doc", "d1"}, {RecordUnreadable, reason, "doc", "d1"}}
		if !slices.Equal(p.Warnings, want) || p.HasMore {
			t.Fatalf("warnings %v (hidden one at %d), hasMore %v; want %v", p.Warnings, hidden, p.HasMore, want)
		}
		if again := e.read(alice(), p.NextCursor, 0); len(again.Records)+len(again.Warnings) != 0 || again.SettledSeq != last {
			t.Fatalf("after the page: %s", js(again))
		}
	})
}

// TestObjectUnavailable: a change of an object the user can still see
// that has no card to build is an OBJECT_UNAVAILABLE warning; the next
// records follow.
func TestObjectUnavailable(t *testing.T) {
	forEachDriver(t, Options{}, func(e *env) {
		t := e.t
		ses := e.session(alice())
		e.write(put("doc", "d1", `{"members":["alice"]}`))
		d1 := e.record("doc", "d1")
		gone := e.inject("patch", store.Change{Kind: store.ChangeUpdated, Type: "doc", ID: "d1", Before: d1})
		e.write(put("note", "n1", `{}`))
		e.settle()
		p := e.read(alice(), ses.Cursor, 0)
		if got := kinds(p.Records); !slices.Equal(got, []string{"object doc/d1@1", "object note/n1@3"}) {
			t.Fatalf("records %v", got)
		}
		if want := []Warning{{ObjectUnavailable, gone, "doc", "d1"}}; !slices.Equal(p.Warnings, want) {
			t.Fatalf("warnings %v, want %v", p.Warnings, want)
		}
		bob := Client{User: "bob", Application: "mail", Reader: members{"bob"}}
		if p := e.read(bob, e.session(bob).Cursor, 0); len(p.Warnings) != 0 {
			t.Fatalf("bob, who cannot see d1, is warned: %v", p.Warnings)
		}
	})
}
