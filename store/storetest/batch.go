package storetest

import (
	"fmt"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// testAppendBatch checks, for a driver whose write transactions
// implement store.BatchAppender, that a batch (of a size that splits over
// several statements, one entity written twice, receipts) leaves exactly
// what the same commits appended one by one leave.
func testAppendBatch(t *testing.T, open OpenFunc) {
	one, batch := open(t), open(t)
	for _, st := range []store.Store{one, batch} {
		if _, err := st.SpaceCreate(ctx0, "s", "e"); err != nil {
			t.Fatal(err)
		}
	}
	const n = 23
	var commits []store.Commit
	var records [][]store.Record
	var prev *store.Record
	for seq := int64(1); seq <= n; seq++ {
		key := store.EntityKey{Type: "task", ID: fmt.Sprintf("t%d", seq)}
		var before *store.Record
		if seq%5 == 0 { // every fifth commit rewrites the previous entity
			key, before = prev.Key(), prev
		}
		c, r := rawCommit(seq, key, fmt.Sprintf(`{"a":%d}`, seq), before, fmt.Sprintf("m%d", seq))
		commits, records = append(commits, c), append(records, []store.Record{r})
		prev = &r
	}
	tx, err := one.WriteBegin(ctx0, store.WriteBeginParams{Space: "s", WriteID: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i := range commits {
		if err := tx.Append(ctx0, commits[i], records[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx0); err != nil {
		t.Fatal(err)
	}
	tx, err = batch.WriteBegin(ctx0, store.WriteBeginParams{Space: "s", WriteID: 7})
	if err != nil {
		t.Fatal(err)
	}
	ba, ok := tx.(store.BatchAppender)
	if !ok {
		_ = tx.Rollback(ctx0) // the driver appends one commit at a time: nothing to compare
		return
	}
	if err := ba.AppendBatch(ctx0, commits, records); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx0); err != nil {
		t.Fatal(err)
	}
	same(t, "commits", func(st store.Store) any {
		cs, err := st.Commits(ctx0, store.CommitsParams{Space: "s", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}, one, batch)
	same(t, "entities", func(st store.Store) any {
		rs, err := st.EntityList(ctx0, store.EntityListParams{Space: "s", Type: "task", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}, one, batch)
	if ok, err := batch.CommitLanded(ctx0, "s", n, 7); err != nil || !ok {
		t.Errorf("batch commit %d landed = %v, %v; want its write id", n, ok, err)
	}
}

// same fails t unless read gives the same JSON on both stores.
func same(t *testing.T, what string, read func(store.Store) any, a, b store.Store) {
	t.Helper()
	if ja, jb := js(read(a)), js(read(b)); ja != jb {
		t.Errorf("%s appended one by one:\n%s\nin a batch:\n%s", what, ja, jb)
	}
}
