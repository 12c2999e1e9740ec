package storetest

import (
	"errors"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// testCommitLanded checks that a write transaction's WriteID is stored
// with its commits (one and several per transaction, plain and optimistic)
// and that CommitLanded tells them apart from other transactions', from
// absent commits and from pruned ones.
func testCommitLanded(t *testing.T, open OpenFunc) {
	st := open(t)
	if _, err := st.SpaceCreate(ctx0, "s", "e"); err != nil {
		t.Fatal(err)
	}
	key := store.EntityKey{Type: "task", ID: "t1"}
	c1, r1 := rawCommit(1, key, `{"a":1}`, nil, "")
	appendWithID(t, st, store.WriteBeginParams{Space: "s", WriteID: 41}, c1, r1)
	c2, r2 := rawCommit(2, key, `{"a":2}`, &r1, "")
	c3, r3 := rawCommit(3, key, `{"a":3}`, &r2, "")
	appendWithID(t, st, store.WriteBeginParams{Space: "s", WriteID: 42}, c2, r2, c3, r3)
	c4, r4 := rawCommit(4, key, `{"a":4}`, &r3, "")
	appendWithID(t, st, store.WriteBeginParams{Space: "s"}, c4, r4)
	c5, r5 := rawCommit(5, key, `{"a":5}`, &r4, "")
	exp := &store.Expectation{Head: 4, Records: map[store.EntityKey]store.Record{key: r4}}
	appendWithID(t, st, store.WriteBeginParams{Space: "s", Entities: []store.EntityKey{key}, Expect: exp, WriteID: 43}, c5, r5)

	for _, tc := range []struct {
		seq, id int64
		want    bool
	}{{1, 41, true}, {1, 42, false}, {2, 42, true}, {3, 42, true}, {4, 42, false}, {5, 43, true}, {6, 43, false}} {
		got, err := st.CommitLanded(ctx0, "s", tc.seq, tc.id)
		if err != nil || got != tc.want {
			t.Errorf("CommitLanded(seq %d, id %d) = %v, %v; want %v", tc.seq, tc.id, got, err, tc.want)
		}
	}
	if _, err := st.CommitLanded(ctx0, "missing", 1, 41); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing space: %v, want ErrNotFound", err)
	}
	if _, err := st.SpacePrune(ctx0, "s", 2); err != nil {
		t.Fatal(err)
	}
	if got, err := st.CommitLanded(ctx0, "s", 1, 41); err == nil {
		t.Errorf("pruned commit: %v, want an error (unknowable)", got)
	}
}

// appendWithID writes commits (each followed by its record) in one
// transaction opened with p.
func appendWithID(t *testing.T, st store.Store, p store.WriteBeginParams, pairs ...any) {
	t.Helper()
	tx, err := st.WriteBegin(ctx0, p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx0) }()
	for i := 0; i < len(pairs); i += 2 {
		c, rec := pairs[i].(store.Commit), pairs[i+1].(store.Record)
		if err := tx.Append(ctx0, c, []store.Record{rec}); err != nil {
			t.Fatalf("append %d: %v", c.Seq, err)
		}
	}
	if err := tx.Commit(ctx0); err != nil {
		t.Fatalf("commit: %v", err)
	}
}
