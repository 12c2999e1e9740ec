package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// testRootCounts covers the causal budget counters: every write
// transaction counts the delivery-authored rows of each root (API writes
// and engine rows count nothing), concurrent writers add up, a park mark
// sticks, spaces are apart, and pruning drops the counters of chains that
// ended below the horizon.
func testRootCounts(t *testing.T, open OpenFunc) {
	t.Parallel()
	h := newHarness(t, open, changelog.Options{})
	h.createSpace("other")
	caused := func(space string, root, cause int64, ms ...changelog.Mutation) changelog.WriteResult {
		t.Helper()
		return h.writeReq(changelog.WriteRequest{Space: space, Mutations: ms, Provenance: store.Provenance{
			Actor: "trigger:t", Via: "trigger", Trigger: "t", Delivery: "d", CausedBy: cause, Root: root, Depth: 1}})
	}
	h.apply(put("task", "a", `{"x":1}`), 1)
	h.apply(put("task", "b", `{"x":1}`), 2)
	h.wantRootCounts("s", []int64{1, 2}, map[int64]store.RootCount{})

	caused("s", 1, 1, put("note", "n1", `{}`), put("note", "n2", `{}`)) // 3, 4
	caused("s", 2, 2, put("note", "m1", `{}`))                          // 5
	caused("other", 1, 1, put("note", "o", `{}`))
	park := changelog.EngineRow{Op: changelog.OpPark, Type: "eddy.delivery", EntityID: "dlv-1", Payload: []byte(`{"trigger":"t","depth":2}`),
		Provenance: store.Provenance{Actor: "engine", Via: "engine", Trigger: "t", Delivery: "dlv-1", CausedBy: 3, Root: 1, Depth: 2}}
	h.writeReq(changelog.WriteRequest{Space: "s", Engine: []changelog.EngineRow{park}, // 6: counts nothing
		Effects: func(ctx context.Context, tx store.WriteTx, _ changelog.WriteResult) error {
			return tx.RootCountAdd(ctx, []store.RootCount{{Root: 1, Parked: true}})
		}})
	h.wantRootCounts("s", []int64{1, 2, 99}, map[int64]store.RootCount{
		1: {Root: 1, Rows: 2, Parked: true, LastSeq: 4},
		2: {Root: 2, Rows: 1, LastSeq: 5},
	})
	h.wantRootCounts("other", []int64{1}, map[int64]store.RootCount{1: {Root: 1, Rows: 1, LastSeq: 1}})

	const writers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := h.log.Write(h.ctx, changelog.WriteRequest{Space: "s",
					Mutations:  []changelog.Mutation{put("note", fmt.Sprintf("w%d-%d", w, i), `{}`), put("note", fmt.Sprintf("v%d-%d", w, i), `{}`)},
					Provenance: store.Provenance{Actor: "trigger:t", Via: "trigger", Trigger: "t", Delivery: "d", CausedBy: 3, Root: 1, Depth: 2}})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent write: %v", err)
		}
	}
	head := h.head()
	h.wantRootCounts("s", []int64{1}, map[int64]store.RootCount{1: {Root: 1, Rows: 2 + 2*writers*each, Parked: true, LastSeq: head}})

	// Root 2's chain ended at 5: pruning through 5 drops its counter;
	// root 1's chain still writes above the horizon and keeps its own.
	if _, err := h.log.Prune(h.ctx, "s", 5); err != nil {
		t.Fatalf("prune: %v", err)
	}
	h.wantRootCounts("s", []int64{1, 2}, map[int64]store.RootCount{1: {Root: 1, Rows: 2 + 2*writers*each, Parked: true, LastSeq: head}})
	if _, err := h.log.Prune(h.ctx, "s", head); err != nil {
		t.Fatalf("prune: %v", err)
	}
	h.wantRootCounts("s", []int64{1}, map[int64]store.RootCount{})
	h.wantRootCounts("other", []int64{1}, map[int64]store.RootCount{1: {Root: 1, Rows: 1, LastSeq: 1}})
}

// wantRootCounts checks the counters RootCounts answers for roots.
func (h *harness) wantRootCounts(space string, roots []int64, want map[int64]store.RootCount) {
	h.t.Helper()
	got, err := h.st.RootCounts(h.ctx, space, roots)
	if err != nil {
		h.t.Fatalf("root counts of %s %v: %v", space, roots, err)
	}
	if len(got) != len(want) {
		h.t.Fatalf("root counts of %s %v = %+v, want %+v", space, roots, got, want)
	}
	for r, w := range want {
		if got[r] != w {
			h.t.Fatalf("root count %d of %s = %+v, want %+v", r, space, got[r], w)
		}
	}
}

// testRootCountsTx covers RootCountTx.RootCounts: inside a write
// transaction, plain or optimistic, the counters read are the stored ones
// plus the transaction's own additions, of its space only, and a
// rolled-back transaction's additions are gone.
func testRootCountsTx(t *testing.T, open OpenFunc) {
	t.Parallel()
	st := open(t)
	for _, sp := range []string{"s", "other"} {
		if _, err := st.SpaceCreate(ctx0, sp, "e"); err != nil {
			t.Fatal(err)
		}
	}
	add := func(space string, counts ...store.RootCount) {
		t.Helper()
		tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: space})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx0) }()
		if err := tx.RootCountAdd(ctx0, counts); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx0); err != nil {
			t.Fatal(err)
		}
	}
	add("s", store.RootCount{Root: 1, Rows: 3, LastSeq: 4}, store.RootCount{Root: 2, Rows: 1, LastSeq: 5})
	add("other", store.RootCount{Root: 1, Rows: 9, LastSeq: 9})
	want := func(tx store.WriteTx, roots []int64, want map[int64]store.RootCount) {
		t.Helper()
		got, err := tx.RootCounts(ctx0, roots)
		if err != nil {
			t.Fatalf("root counts %v: %v", roots, err)
		}
		if len(got) != len(want) {
			t.Fatalf("root counts %v = %+v, want %+v", roots, got, want)
		}
		for r, w := range want {
			if got[r] != w {
				t.Fatalf("root count %d = %+v, want %+v", r, got[r], w)
			}
		}
	}
	for _, optimistic := range []bool{false, true} {
		t.Run(fmt.Sprintf("optimistic=%v", optimistic), func(t *testing.T) {
			p := store.WriteBeginParams{Space: "s"}
			if optimistic {
				p.Expect = &store.Expectation{}
			}
			tx, err := st.WriteBegin(ctx0, p)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx0) }()
			want(tx, nil, map[int64]store.RootCount{})
			want(tx, []int64{1, 2, 99}, map[int64]store.RootCount{
				1: {Root: 1, Rows: 3, LastSeq: 4}, 2: {Root: 2, Rows: 1, LastSeq: 5}})
			if err := tx.RootCountAdd(ctx0, []store.RootCount{{Root: 1, Rows: 2, LastSeq: 7}, {Root: 99, Parked: true}}); err != nil {
				t.Fatal(err)
			}
			want(tx, []int64{1, 99}, map[int64]store.RootCount{
				1: {Root: 1, Rows: 5, LastSeq: 7}, 99: {Root: 99, Parked: true}})
			if err := tx.Rollback(ctx0); err != nil {
				t.Fatal(err)
			}
		})
	}
	got, err := st.RootCounts(ctx0, "s", []int64{1, 99})
	if err != nil || len(got) != 1 || got[1] != (store.RootCount{Root: 1, Rows: 3, LastSeq: 4}) {
		t.Fatalf("root counts after rollbacks = %+v, %v", got, err)
	}
}
