package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

// fixture writes, in space "sp":
//
//	1 put task/a (owner, m-1)   2 put note/n (owner)   3 put task/a (bot, m-3)
//	4 delete task/a (engine)    5 put task/b (owner)
//
// and returns the records as last written.
func fixture(t *testing.T, s *Store) map[string]store.Record {
	t.Helper()
	mustSpace(t, s, "sp")
	a1 := rec("task", "a", 1, `{"title":"x <&> \u00e9"}`)
	n := rec("note", "n", 2, `{"title":"n"}`)
	c1, r1 := putCommit(1, nil, a1, "owner", "m-1")
	c2, r2 := putCommit(2, nil, n, "owner", "")
	write(t, s, "sp", ap(c1, r1), ap(c2, r2))
	a3 := rec("task", "a", 3, `{"title":"y"}`)
	a3.Links = []store.Link{{Rel: "owner", Target: store.EntityKey{Type: "user", ID: "u"}}}
	c3, r3 := putCommit(3, snap(r1[0]), a3, "bot", "m-3")
	write(t, s, "sp", ap(c3, r3))
	c4, r4 := deleteCommit(4, r3[0], "engine")
	b := rec("task", "b", 5, `{"title":"b"}`)
	c5, r5 := putCommit(5, nil, b, "owner", "")
	write(t, s, "sp", ap(c4, r4), ap(c5, r5))
	return map[string]store.Record{"a1": r1[0], "n": r2[0], "a3": r3[0], "a4": r4[0], "b": r5[0]}
}

func TestWriteAndRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	recs := fixture(t, s)
	sp, err := s.SpaceGet(ctx, "sp")
	if err != nil || sp.Head != 5 || sp.Horizon != 0 {
		t.Fatalf("space = %+v, %v; want head 5", sp, err)
	}
	t.Run("entity get", func(t *testing.T) {
		got, err := s.EntityGet(ctx, "sp", store.EntityKey{Type: "task", ID: "a"})
		if err != nil || !reflect.DeepEqual(got, recs["a4"]) {
			t.Fatalf("get = %+v, %v; want tombstone %+v", got, err, recs["a4"])
		}
		got, err = s.EntityGet(ctx, "sp", store.EntityKey{Type: "note", ID: "n"})
		if err != nil || !reflect.DeepEqual(got, recs["n"]) {
			t.Fatalf("get = %+v, %v; want %+v", got, err, recs["n"])
		}
		if string(got.Properties) != `{"title":"n"}` {
			t.Fatalf("properties = %s", got.Properties)
		}
		if _, err := s.EntityGet(ctx, "sp", store.EntityKey{Type: "task", ID: "zz"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("get missing: %v, want ErrNotFound", err)
		}
	})
	t.Run("write begin loads entities", func(t *testing.T) {
		tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp", Entities: []store.EntityKey{
			{Type: "task", ID: "a"}, {Type: "task", ID: "b"}, {Type: "task", ID: "none"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if tx.Space().Head != 5 || tx.Space().ID != "sp" {
			t.Fatalf("space = %+v", tx.Space())
		}
		want := map[store.EntityKey]store.Record{
			{Type: "task", ID: "a"}: recs["a4"], {Type: "task", ID: "b"}: recs["b"],
		}
		if got := tx.Entities(); !reflect.DeepEqual(got, want) {
			t.Fatalf("entities = %+v, want %+v", got, want)
		}
	})
	t.Run("commits", func(t *testing.T) {
		got, err := s.Commits(ctx, store.CommitsParams{Space: "sp", After: 2, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Seq != 3 || got[1].Seq != 4 {
			t.Fatalf("commits = %+v", got)
		}
		c3, _ := putCommit(3, snap(recs["a1"]), recs["a3"], "bot", "m-3")
		if !reflect.DeepEqual(got[0], c3) {
			t.Fatalf("commit 3 =\n%+v\nwant\n%+v", got[0], c3)
		}
		c4, _ := deleteCommit(4, recs["a3"], "engine")
		c4.Changes[0].ConflictGroups = []string{}
		c4.Receipt.Accepted, c4.Receipt.Rejected = []string{}, []store.RejectedProperty{}
		if !reflect.DeepEqual(got[1], c4) {
			t.Fatalf("commit 4 =\n%+v\nwant\n%+v", got[1], c4)
		}
		all, err := s.Commits(ctx, store.CommitsParams{Space: "sp", After: 0, Limit: 100})
		if err != nil || len(all) != 5 {
			t.Fatalf("all commits: %d, %v", len(all), err)
		}
		for _, c := range all {
			if len(c.Changes) != 1 || c.Changes[0].Version != c.Seq || c.TS.Location() != time.UTC {
				t.Fatalf("commit %d = %+v", c.Seq, c)
			}
		}
		none, err := s.Commits(ctx, store.CommitsParams{Space: "sp", After: 5, Limit: 10})
		if err != nil || none == nil || len(none) != 0 {
			t.Fatalf("commits after head = %v, %v; want empty", none, err)
		}
	})
	t.Run("caused by column", func(t *testing.T) {
		var c3, c4 *int64
		q := "SELECT (SELECT caused_by FROM commits WHERE space='sp' AND seq=3), (SELECT caused_by FROM commits WHERE space='sp' AND seq=4)"
		if err := s.pool.QueryRow(ctx, q).Scan(&c3, &c4); err != nil {
			t.Fatal(err)
		}
		if c3 != nil || c4 == nil || *c4 != 3 {
			t.Fatalf("caused_by = %v, %v; want NULL, 3", c3, c4)
		}
	})
}

func TestRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	fixture(t, s)
	tests := []struct {
		name string
		p    store.RowsParams
		want []int64
	}{
		{"all", store.RowsParams{Lo: 0, Hi: 5}, []int64{1, 2, 3, 4, 5}},
		{"window", store.RowsParams{Lo: 1, Hi: 4}, []int64{2, 3, 4}},
		{"limit", store.RowsParams{Lo: 0, Hi: 5, Limit: 2}, []int64{1, 2}},
		{"desc", store.RowsParams{Lo: 0, Hi: 5, Desc: true, Limit: 3}, []int64{5, 4, 3}},
		{"desc window", store.RowsParams{Lo: 2, Hi: 4, Desc: true}, []int64{4, 3}},
		{"types", store.RowsParams{Hi: 5, Filter: store.RowFilter{Types: []string{"note"}}}, []int64{2}},
		{"ops", store.RowsParams{Hi: 5, Filter: store.RowFilter{Ops: []string{"delete"}}}, []int64{4}},
		{"actors", store.RowsParams{Hi: 5, Filter: store.RowFilter{Actors: []string{"bot", "engine"}}}, []int64{3, 4}},
		{"exclude types", store.RowsParams{Hi: 5, Filter: store.RowFilter{ExcludeTypes: []string{"task"}}}, []int64{2}},
		{"exclude ops", store.RowsParams{Hi: 5, Filter: store.RowFilter{ExcludeOps: []string{"put"}}}, []int64{4}},
		{"exclude actors", store.RowsParams{Hi: 5, Filter: store.RowFilter{ExcludeActors: []string{"owner"}}}, []int64{3, 4}},
		{"entity", store.RowsParams{Hi: 5, Filter: store.RowFilter{EntityType: "task", EntityID: "a"}}, []int64{1, 3, 4}},
		{"entity desc", store.RowsParams{Hi: 5, Desc: true, Limit: 2, Filter: store.RowFilter{EntityType: "task", EntityID: "a"}}, []int64{4, 3}},
		{"entity other type", store.RowsParams{Hi: 5, Filter: store.RowFilter{EntityType: "note", EntityID: "a"}}, []int64{}},
		{"combined", store.RowsParams{Hi: 5, Filter: store.RowFilter{Types: []string{"task"}, ExcludeActors: []string{"engine"}, Ops: []string{"put"}}}, []int64{1, 3, 5}},
		{"empty range", store.RowsParams{Lo: 5, Hi: 5}, []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Space = "sp"
			rows, err := s.Rows(ctx, tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if got := seqs(rows); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("seqs = %v, want %v", got, tt.want)
			}
		})
	}
	rows, err := s.Rows(ctx, store.RowsParams{Space: "sp", Lo: 0, Hi: 1})
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows = %v, %v", rows, err)
	}
	want := store.Row{Seq: 1, TS: at(1), Actor: "owner", Op: "put", EntityID: "a", Type: "task",
		Payload: json.RawMessage(`{"created":true,"properties":["title"]}`)}
	if !reflect.DeepEqual(rows[0], want) {
		t.Fatalf("row = %+v, want %+v", rows[0], want)
	}
}

func TestEntityList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "sp")
	var list []appended
	ids := []string{"b", "A", "a", "_", "c"}
	for i, id := range ids {
		c, r := putCommit(int64(i+1), nil, rec("task", id, int64(i+1), `{}`), "o", "")
		list = append(list, ap(c, r))
	}
	other, otherRecs := putCommit(6, nil, rec("note", "a", 6, `{}`), "o", "")
	list = append(list, ap(other, otherRecs))
	write(t, s, "sp", list...)
	c7, r7 := deleteCommit(7, list[2].recs[0], "o") // deletes task/a at 7
	write(t, s, "sp", ap(c7, r7))
	tests := []struct {
		name string
		p    store.EntityListParams
		want []string
	}{
		{"live bytewise", store.EntityListParams{Type: "task"}, []string{"A", "_", "b", "c"}},
		{"after", store.EntityListParams{Type: "task", After: "A"}, []string{"_", "b", "c"}},
		{"limit", store.EntityListParams{Type: "task", Limit: 2}, []string{"A", "_"}},
		{"as of before delete", store.EntityListParams{Type: "task", AsOf: 6}, []string{"A", "_", "a", "b", "c"}},
		{"as of at delete", store.EntityListParams{Type: "task", AsOf: 7}, []string{"A", "_", "b", "c"}},
		{"other type", store.EntityListParams{Type: "note"}, []string{"a"}},
		{"unknown type", store.EntityListParams{Type: "x"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Space = "sp"
			recs, err := s.EntityList(ctx, tt.p)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, r := range recs {
				got = append(got, r.ID)
				if r.Type != tt.p.Type || r.Links == nil {
					t.Fatalf("record %+v", r)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ids = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFirstChangesAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	recs := fixture(t, s)
	a, n, b := store.EntityKey{Type: "task", ID: "a"}, store.EntityKey{Type: "note", ID: "n"}, store.EntityKey{Type: "task", ID: "b"}
	none := store.EntityKey{Type: "task", ID: "none"}
	got, err := s.FirstChangesAfter(ctx, "sp", 1, []store.EntityKey{a, n, b, none, a})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d changes, want 3: %+v", len(got), got)
	}
	if c := got[a]; c.Version != 3 || c.Kind != store.ChangeUpdated || !reflect.DeepEqual(c.Before, snap(recs["a1"])) {
		t.Fatalf("task/a = %+v, want the change at 3 with the seq-1 image", c)
	}
	if c := got[n]; c.Version != 2 || c.Before != nil || !reflect.DeepEqual(c.After, snap(recs["n"])) {
		t.Fatalf("note/n = %+v", c)
	}
	if c := got[b]; c.Version != 5 {
		t.Fatalf("task/b = %+v", c)
	}
	got, err = s.FirstChangesAfter(ctx, "sp", 3, []store.EntityKey{a})
	if err != nil || got[a].Version != 4 || got[a].After != nil || got[a].Kind != store.ChangeDeleted {
		t.Fatalf("after 3: %+v, %v; want the delete at 4", got, err)
	}
	got, err = s.FirstChangesAfter(ctx, "sp", 5, []store.EntityKey{a, b})
	if err != nil || len(got) != 0 {
		t.Fatalf("after head: %+v, %v; want none", got, err)
	}
	got, err = s.FirstChangesAfter(ctx, "sp", 0, nil)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no keys: %+v, %v", got, err)
	}
}

func TestReceipts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	recs := fixture(t, s)
	old := store.StoredReceipt{MutationID: "m-old", CreatedAt: t0.Add(-48 * time.Hour),
		Receipt: store.Receipt{MutationID: "m-old", Status: store.ReceiptNoop}}
	rej := store.StoredReceipt{MutationID: "m-rej", CreatedAt: t0,
		Receipt: store.Receipt{MutationID: "m-rej", Status: store.ReceiptRejected,
			Rejected: []store.RejectedProperty{{Property: "title", Reason: "conflict"}},
			Reason:   &store.Reason{Code: "conflict", Message: "m"}, Proposed: json.RawMessage(`{"title":"z"}`)}}
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []store.StoredReceipt{old, rej} {
		if err := tx.ReceiptPut(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if sp, _ := s.SpaceGet(ctx, "sp"); sp.Head != 5 {
		t.Fatalf("receipt-only commit moved the head to %d", sp.Head)
	}
	load := func(since time.Time) map[string]store.StoredReceipt {
		t.Helper()
		tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp",
			MutationIDs: []string{"m-1", "m-3", "m-old", "m-rej", "m-none"}, ReceiptsSince: since})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		return tx.Receipts()
	}
	got := load(t0.Add(-time.Hour))
	if len(got) != 3 {
		t.Fatalf("receipts since -1h = %v, want m-1, m-3, m-rej", got)
	}
	m3 := got["m-3"]
	if m3.Receipt.Seq != 3 || m3.Receipt.Status != store.ReceiptApplied || !m3.CreatedAt.Equal(at(3)) ||
		!reflect.DeepEqual(m3.Entity, snap(recs["a3"])) {
		t.Fatalf("m-3 = %+v", m3)
	}
	if !reflect.DeepEqual(got["m-rej"], rej) {
		t.Fatalf("m-rej = %+v, want %+v", got["m-rej"], rej)
	}
	if got := load(time.Time{}); len(got) != 4 {
		t.Fatalf("receipts since zero = %d, want 4", len(got))
	}
	// Replace the expired receipt.
	fresh := old
	fresh.CreatedAt, fresh.Receipt.Status = t0, store.ReceiptRejected
	tx, err = s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.ReceiptPut(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r, ok := load(t0.Add(-time.Hour))["m-old"]; !ok || r.Receipt.Status != store.ReceiptRejected {
		t.Fatalf("replaced receipt = %+v, %v", r, ok)
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	fixture(t, s)
	sp, err := s.SpacePrune(ctx, "sp", 3)
	if err != nil || sp.Head != 5 || sp.Horizon != 3 {
		t.Fatalf("prune = %+v, %v; want head 5 horizon 3", sp, err)
	}
	rows, err := s.Rows(ctx, store.RowsParams{Space: "sp", Hi: 5})
	if err != nil || !reflect.DeepEqual(seqs(rows), []int64{4, 5}) {
		t.Fatalf("rows after prune = %v, %v", seqs(rows), err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM commits WHERE space = 'sp' AND seq <= 3").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d pruned commits left, %v", n, err)
	}
	if got, err := s.FirstChangesAfter(ctx, "sp", 0, []store.EntityKey{{Type: "note", ID: "n"}}); err != nil || len(got) != 0 {
		t.Fatalf("pruned changes still visible: %+v, %v", got, err)
	}
	if sp, err = s.SpacePrune(ctx, "sp", 2); err != nil || sp.Horizon != 3 {
		t.Fatalf("prune below the horizon = %+v, %v; horizon must stay 3", sp, err)
	}
	if sp, err = s.SpacePrune(ctx, "sp", 5); err != nil || sp.Head != 5 || sp.Horizon != 5 {
		t.Fatalf("prune everything = %+v, %v", sp, err)
	}
	if c, err := s.Commits(ctx, store.CommitsParams{Space: "sp", Limit: 10}); err != nil || len(c) != 0 {
		t.Fatalf("commits after pruning everything = %v, %v", c, err)
	}
	// The next append continues after the head.
	c6, r6 := putCommit(6, nil, rec("task", "z", 6, `{}`), "o", "")
	write(t, s, "sp", ap(c6, r6))
	if sp, _ := s.SpaceGet(ctx, "sp"); sp.Head != 6 || sp.Horizon != 5 {
		t.Fatalf("space after append = %+v", sp)
	}
}

func TestRollbackLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "sp")
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp"})
	if err != nil {
		t.Fatal(err)
	}
	c, r := putCommit(1, nil, rec("task", "a", 1, `{}`), "o", "m")
	if err := tx.Append(ctx, c, r); err != nil {
		t.Fatal(err)
	}
	if err := tx.ReceiptPut(ctx, store.StoredReceipt{MutationID: "x", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("second rollback: %v", err)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("commit after rollback succeeded")
	}
	for _, table := range []string{"commits", "entities", "receipts"} {
		var n int
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s has %d rows after rollback, %v", table, n, err)
		}
	}
	if sp, _ := s.SpaceGet(ctx, "sp"); sp.Head != 0 {
		t.Fatalf("head = %d after rollback", sp.Head)
	}
	if n := s.pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections acquired after rollback", n)
	}
	// Rollback after commit is a no-op.
	tx, err = s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Append(ctx, c, r); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("rollback after commit: %v", err)
	}
	if sp, _ := s.SpaceGet(ctx, "sp"); sp.Head != 1 {
		t.Fatalf("head = %d, want 1", sp.Head)
	}
}

func TestAppendWrongSeq(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "sp")
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, seq := range []int64{0, 2, -1} {
		c, r := putCommit(seq, nil, rec("task", "a", seq, `{}`), "o", "")
		if err := tx.Append(ctx, c, r); err == nil {
			t.Fatalf("append of seq %d at head 0 succeeded", seq)
		}
	}
	c1, r1 := putCommit(1, nil, rec("task", "a", 1, `{}`), "o", "")
	if err := tx.Append(ctx, c1, r1); err != nil {
		t.Fatal(err)
	}
	if err := tx.Append(ctx, c1, r1); err == nil {
		t.Fatal("appending seq 1 twice succeeded")
	}
	c2, r2 := putCommit(2, snap(r1[0]), rec("task", "a", 2, `{"v":2}`), "o", "")
	if err := tx.Append(ctx, c2, r2); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.EntityGet(ctx, "sp", store.EntityKey{Type: "task", ID: "a"})
	if err != nil || got.Version != 2 || string(got.Properties) != `{"v":2}` {
		t.Fatalf("entity after two appends in one transaction = %+v, %v", got, err)
	}
}

func TestCommitErrorLeavesNoTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "sp")
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp"})
	if err != nil {
		t.Fatal(err)
	}
	c, r := putCommit(1, nil, rec("task", "a", 1, `{}`), "o", "")
	r[0].Kind = "bogus" // violates the entities kind check at commit
	if err := tx.Append(ctx, c, r); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("commit of an invalid record succeeded")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("rollback after a failed commit: %v", err)
	}
	if n := s.pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections acquired", n)
	}
	if n := openTransactions(t, s); n != 0 {
		t.Fatalf("%d sessions inside a transaction", n)
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM commits").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d commits after a failed commit, %v", n, err)
	}
	// The lock was released: the next writer proceeds at once.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, r = putCommit(1, nil, rec("task", "a", 1, `{}`), "o", "")
	tx, err = s.WriteBegin(wctx, store.WriteBeginParams{Space: "sp"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Append(wctx, c, r); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(wctx); err != nil {
		t.Fatal(err)
	}
}

func TestCanceledCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "sp")
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp"})
	if err != nil {
		t.Fatal(err)
	}
	c, r := putCommit(1, nil, rec("task", "a", 1, `{}`), "o", "")
	if err := tx.Append(ctx, c, r); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := tx.Commit(cctx); err == nil {
		t.Fatal("commit with a canceled context succeeded")
	}
	if n := s.pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections acquired", n)
	}
	sp, err := s.SpaceGet(ctx, "sp")
	if err != nil || sp.Head != 0 {
		t.Fatalf("space = %+v, %v; want head 0", sp, err)
	}
}

func TestWriteLockSerializes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "sp")
	mustSpace(t, s, "other")
	first, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Rollback(ctx) }()
	// Another space is not blocked.
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	other, err := s.WriteBegin(octx, store.WriteBeginParams{Space: "other"})
	if err != nil {
		t.Fatalf("other space blocked: %v", err)
	}
	_ = other.Rollback(ctx)
	// The same space waits for the first transaction.
	got := make(chan store.WriteTx, 1)
	go func() {
		tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp"})
		if err != nil {
			t.Errorf("second write begin: %v", err)
			close(got)
			return
		}
		got <- tx
	}()
	select {
	case <-got:
		t.Fatal("second writer did not wait for the lock")
	case <-time.After(200 * time.Millisecond):
	}
	c, r := putCommit(1, nil, rec("task", "a", 1, `{}`), "o", "")
	if err := first.Append(ctx, c, r); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	second, ok := <-got
	if !ok {
		t.FailNow()
	}
	defer func() { _ = second.Rollback(ctx) }()
	if second.Space().Head != 1 {
		t.Fatalf("second writer saw head %d, want 1", second.Space().Head)
	}
}

func TestConcurrentWritersGapless(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "sp")
	const writers, each = 8, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := appendNext(ctx, s, "sp", fmt.Sprintf("w%d-%d", w, i)); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	rows, err := s.Rows(ctx, store.RowsParams{Space: "sp", Hi: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != writers*each {
		t.Fatalf("%d rows, want %d", len(rows), writers*each)
	}
	for i, r := range rows {
		if r.Seq != int64(i+1) {
			t.Fatalf("row %d has seq %d: gap", i, r.Seq)
		}
	}
	if sp, _ := s.SpaceGet(ctx, "sp"); sp.Head != writers*each {
		t.Fatalf("head = %d", sp.Head)
	}
}

// appendNext appends one commit creating task/id at the next seq.
func appendNext(ctx context.Context, s *Store, space, id string) error {
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: space,
		Entities: []store.EntityKey{{Type: "task", ID: id}}, MutationIDs: []string{id}})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	seq := tx.Space().Head + 1
	c, r := putCommit(seq, nil, rec("task", id, seq, `{}`), "o", id)
	if err := tx.Append(ctx, c, r); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func TestNotify(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := openStore(t)
	mustSpace(t, s, "sp")
	conn, err := pgx.Connect(ctx, s.pool.Config().ConnConfig.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		t.Fatal(err)
	}
	// A receipt-only transaction appends nothing and notifies nothing.
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.ReceiptPut(ctx, store.StoredReceipt{MutationID: "n", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c1, r1 := putCommit(1, nil, rec("task", "a", 1, `{}`), "o", "")
	c2, r2 := putCommit(2, nil, rec("task", "b", 2, `{}`), "o", "")
	write(t, s, "sp", ap(c1, r1), ap(c2, r2))
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Channel != NotifyChannel || n.Payload != "sp:2" {
		t.Fatalf("notification = %s %q, want %s \"sp:2\"", n.Channel, n.Payload, NotifyChannel)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "sp")
	props := `{"a":"<b>&amp;</b>","emoji":"😀","n":1.50,"u":"\u2028"}`
	r := rec("task", "a", 1, props)
	r.GroupVersions = nil
	c, recs := putCommit(1, nil, r, "o", "m")
	c.Payload = json.RawMessage(`{"properties":["<a>"]}`)
	write(t, s, "sp", ap(c, recs))
	got, err := s.EntityGet(ctx, "sp", store.EntityKey{Type: "task", ID: "a"})
	if err != nil || string(got.Properties) != props || got.GroupVersions != nil {
		t.Fatalf("entity = %s, %v, %v", got.Properties, got.GroupVersions, err)
	}
	commits, err := s.Commits(ctx, store.CommitsParams{Space: "sp", Limit: 1})
	if err != nil || len(commits) != 1 {
		t.Fatal(commits, err)
	}
	if p := string(commits[0].Payload); p != `{"properties":["<a>"]}` {
		t.Fatalf("payload = %s", p)
	}
	if p := string(commits[0].Changes[0].After.Properties); !strings.Contains(p, "<b>&amp;</b>") {
		t.Fatalf("snapshot properties were escaped: %s", p)
	}
}

// twoEntityCommit builds a merge-like commit at seq: it updates primary
// and deletes second.
func twoEntityCommit(seq int64, primary, second store.Record) (store.Commit, []store.Record) {
	c, recs := putCommit(seq, snap(primary), primary, "o", "")
	c.Op = "merge"
	d, tomb := deleteCommit(seq, second, "o")
	ch := d.Changes[0]
	ch.Ordinal = 1
	c.Changes = append(c.Changes, ch)
	return c, append(recs, tomb...)
}

func TestFirstChangesAfterSecondEntity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "sp")
	a, b, x := rec("task", "a", 1, `{"v":1}`), rec("task", "b", 2, `{"v":2}`), rec("note", "x", 3, `{}`)
	for i, r := range []store.Record{a, b, x} {
		c, recs := putCommit(int64(i+1), nil, r, "o", "")
		write(t, s, "sp", appended{c, recs})
	}
	c4, r4 := twoEntityCommit(4, a, b)
	// A commit naming note/x that changes nothing: the lookup must look past it.
	c5, _ := putCommit(5, nil, x, "o", "")
	c5.Changes = nil
	c6, r6 := putCommit(6, snap(x), x, "o", "")
	write(t, s, "sp", appended{c4, r4}, appended{c5, nil}, appended{c6, r6})

	ka, kb, kx := a.Key(), b.Key(), x.Key()
	tests := []struct {
		after int64
		want  map[store.EntityKey]string // key -> kind@version
	}{
		{0, map[store.EntityKey]string{ka: "created@1", kb: "created@2", kx: "created@3"}},
		{2, map[store.EntityKey]string{ka: "updated@4", kb: "deleted@4", kx: "created@3"}},
		{3, map[store.EntityKey]string{ka: "updated@4", kb: "deleted@4", kx: "updated@6"}},
		{4, map[store.EntityKey]string{kx: "updated@6"}},
		{6, map[store.EntityKey]string{}},
	}
	for _, tt := range tests {
		got, err := s.FirstChangesAfter(ctx, "sp", tt.after, []store.EntityKey{ka, kb, kx})
		if err != nil {
			t.Fatal(err)
		}
		have := map[store.EntityKey]string{}
		for k, ch := range got {
			if ch.Type != k.Type || ch.ID != k.ID {
				t.Fatalf("after %d: change %+v filed under %v", tt.after, ch, k)
			}
			have[k] = fmt.Sprintf("%s@%d", ch.Kind, ch.Version)
		}
		if !reflect.DeepEqual(have, tt.want) {
			t.Fatalf("after %d = %v, want %v", tt.after, have, tt.want)
		}
	}
	// Entity history stays on the primary entity.
	rows, err := s.Rows(ctx, store.RowsParams{Space: "sp", Hi: 6, Filter: store.RowFilter{EntityType: "task", EntityID: "b"}})
	if err != nil || !reflect.DeepEqual(seqs(rows), []int64{2}) {
		t.Fatalf("task/b history = %v, %v", seqs(rows), err)
	}
	var second int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM commits WHERE entity2_id IS NOT NULL").Scan(&second); err != nil || second != 1 {
		t.Fatalf("%d commits name a second entity, %v; want 1", second, err)
	}
}

func TestAppendRefusesUnstorableChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "sp")
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	third, _ := putCommit(1, nil, rec("task", "a", 1, `{}`), "o", "")
	for i, id := range []string{"b", "c"} {
		ch := third.Changes[0]
		ch.Ordinal, ch.ID = i+1, id
		third.Changes = append(third.Changes, ch)
	}
	dup, _ := putCommit(1, nil, rec("task", "a", 1, `{}`), "o", "")
	dup.Changes = append(dup.Changes, dup.Changes[0])
	for name, c := range map[string]store.Commit{"third entity": third, "duplicate ordinal": dup} {
		if err := tx.Append(ctx, c, nil); err == nil {
			t.Fatalf("%s: append succeeded", name)
		}
	}
	// Refused before anything was buffered: the transaction goes on.
	c, r := putCommit(1, nil, rec("task", "a", 1, `{}`), "o", "")
	if err := tx.Append(ctx, c, r); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if cs, err := s.Commits(ctx, store.CommitsParams{Space: "sp"}); err != nil || len(cs) != 1 || len(cs[0].Changes) != 1 {
		t.Fatalf("commits = %+v, %v", cs, err)
	}
}

func TestEntityWritesByRowState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "sp")
	a1, b1 := rec("task", "a", 1, `{"v":1}`), rec("task", "b", 2, `{"v":1}`)
	ca, ra := putCommit(1, nil, a1, "o", "")
	cb, rb := putCommit(2, nil, b1, "o", "")
	write(t, s, "sp", appended{ca, ra}, appended{cb, rb})

	// a, b exist and c, d do not (read under the lock: update and insert);
	// e and f were not read (upsert). Each state gets its multi-row form,
	// and x (one of each) the single-row one in a second transaction.
	keys := []store.EntityKey{a1.Key(), b1.Key(), {Type: "task", ID: "c"}, {Type: "task", ID: "d"}}
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp", Entities: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var recs []store.Record
	for i, id := range []string{"a", "b", "c", "d", "e", "f"} {
		recs = append(recs, rec("task", id, 3, fmt.Sprintf(`{"v":%d}`, i+10)))
	}
	c3, _ := putCommit(3, nil, recs[0], "o", "")
	if err := tx.Append(ctx, c3, recs); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err = s.WriteBegin(ctx, store.WriteBeginParams{Space: "sp", Entities: []store.EntityKey{{Type: "task", ID: "a"}, {Type: "task", ID: "g"}}})
	if err != nil {
		t.Fatal(err)
	}
	recs = []store.Record{rec("task", "a", 4, `{"v":20}`), rec("task", "g", 4, `{"v":21}`), rec("task", "h", 4, `{"v":22}`)}
	c4, _ := putCommit(4, snap(recs[0]), recs[0], "o", "")
	if err := tx.Append(ctx, c4, recs); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": `{"v":20}`, "b": `{"v":11}`, "c": `{"v":12}`, "d": `{"v":13}`,
		"e": `{"v":14}`, "f": `{"v":15}`, "g": `{"v":21}`, "h": `{"v":22}`}
	for id, props := range want {
		got, err := s.EntityGet(ctx, "sp", store.EntityKey{Type: "task", ID: id})
		if err != nil || string(got.Properties) != props {
			t.Fatalf("task/%s = %s, %v; want %s", id, got.Properties, err, props)
		}
	}
}
