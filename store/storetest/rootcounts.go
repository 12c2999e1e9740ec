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
