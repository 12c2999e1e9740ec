package storetest

import (
	"slices"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// testCausedBy covers CommitsCausedBy: the rows caused by a set of rows,
// in seq order, whole, bounded by the limit, per space and gone once
// pruned.
func testCausedBy(t *testing.T, open OpenFunc) {
	t.Parallel()
	h := newHarness(t, open, changelog.Options{})
	h.createSpace("other")
	caused := func(space string, cause int64, depth int, ms ...changelog.Mutation) {
		t.Helper()
		h.writeReq(changelog.WriteRequest{Space: space, Mutations: ms, Provenance: store.Provenance{
			Actor: "trigger:t", Via: "trigger", Trigger: "t", Delivery: "d", CausedBy: cause, Depth: depth}})
	}
	h.apply(put("task", "a", `{"x":1}`), 1)
	h.apply(put("task", "b", `{"x":1}`), 2)
	caused("s", 1, 1, put("note", "n1", `{"y":1}`), put("note", "n2", `{"y":2}`)) // 3, 4
	caused("s", 3, 2, put("note", "n3", `{"y":3}`))                               // 5
	caused("s", 2, 1, merge("task", "b", "a"))                                    // 6
	h.apply(put("task", "c", `{"x":1}`), 7)
	h.writeReq(changelog.WriteRequest{Space: "other", Mutations: []changelog.Mutation{put("task", "a", `{}`)}})
	caused("other", 1, 1, put("note", "o", `{}`))

	for _, tc := range []struct {
		causes []int64
		limit  int
		want   []int64
	}{
		{[]int64{1}, 0, []int64{3, 4}},
		{[]int64{1, 2}, 0, []int64{3, 4, 6}},
		{[]int64{2, 1, 3}, 0, []int64{3, 4, 5, 6}},
		{[]int64{1, 2, 3}, 2, []int64{3, 4}},
		{[]int64{4, 5, 6, 7}, 0, nil},
		{[]int64{}, 0, nil},
		{[]int64{99}, 0, nil},
	} {
		cs, err := h.st.CommitsCausedBy(h.ctx, store.CausedParams{Space: "s", Causes: tc.causes, Limit: tc.limit})
		if err != nil {
			t.Fatalf("caused by %v: %v", tc.causes, err)
		}
		var seqs []int64
		for _, c := range cs {
			seqs = append(seqs, c.Seq)
			want := h.commitAt(c.Seq)
			if js(c) != js(want) {
				t.Errorf("caused by %v: commit %d = %s, want %s", tc.causes, c.Seq, js(c), js(want))
			}
		}
		if !slices.Equal(seqs, tc.want) {
			t.Errorf("caused by %v limit %d = %v, want %v", tc.causes, tc.limit, seqs, tc.want)
		}
	}
	if _, err := h.log.Prune(h.ctx, "s", 4); err != nil {
		t.Fatalf("prune: %v", err)
	}
	cs, err := h.st.CommitsCausedBy(h.ctx, store.CausedParams{Space: "s", Causes: []int64{1, 3}})
	if err != nil || len(cs) != 1 || cs[0].Seq != 5 {
		t.Fatalf("after prune: %s, %v; want commit 5", js(cs), err)
	}
}
