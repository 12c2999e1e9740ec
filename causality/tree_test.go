package causality

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// fakeTree is a TreeReader over a fakeLog and the deliveries it holds.
type fakeTree struct {
	*fakeLog
	deliveries []store.Delivery
}

func (f *fakeTree) CommitsCausedBy(_ context.Context, p store.CausedParams) ([]store.Commit, error) {
	var out []store.Commit
	for seq := f.horizon + 1; seq <= int64(len(f.commits)); seq++ {
		c := f.commits[seq]
		if slices.Contains(p.Causes, c.Provenance.CausedBy) && c.Provenance.CausedBy != 0 && (p.Limit < 1 || len(out) < p.Limit) {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeTree) DeliveriesAt(_ context.Context, _ string, seq int64) ([]store.Delivery, error) {
	var out []store.Delivery
	for _, d := range f.deliveries {
		if d.Seq == seq {
			out = append(out, d)
		}
	}
	return out, nil
}

// fanOut is row 1 (an API write) whose deliveries d1 (t1) and d2 (t2)
// wrote rows 2 and 3, and 4; row 2's delivery d3 wrote row 5, whose
// delivery d4 was parked with the engine row 6; row 7 is unrelated.
func fanOut() *fakeTree {
	api := store.Provenance{Actor: "owner", Via: "api"}
	by := func(trigger, delivery string, cause int64, depth int) store.Provenance {
		return store.Provenance{Actor: "trigger:" + trigger, Via: "trigger", Trigger: trigger, Delivery: delivery, CausedBy: cause, Depth: depth}
	}
	prov := []store.Provenance{api, by("t1", "d1", 1, 1), by("t1", "d1", 1, 1), by("t2", "d2", 1, 1), by("t1", "d3", 2, 2),
		{Actor: ActorEngine, Via: ViaEngine, Trigger: "t1", Delivery: "d4", CausedBy: 5, Depth: 3}, api}
	f := &fakeTree{fakeLog: &fakeLog{commits: map[int64]store.Commit{}}}
	for i, p := range prov {
		seq := int64(i + 1)
		f.commits[seq] = store.Commit{Row: store.Row{Seq: seq, Op: "put"}, Provenance: p}
	}
	f.deliveries = []store.Delivery{
		{ID: "d1", Trigger: "t1", Seq: 1, Status: store.DeliverySucceeded, Depth: 1},
		{ID: "d2", Trigger: "t2", Seq: 1, Status: store.DeliverySucceeded, Depth: 1},
		{ID: "d3", Trigger: "t1", Seq: 2, Status: store.DeliverySucceeded, Depth: 2},
		{ID: "d4", Trigger: "t1", Seq: 5, Status: store.DeliveryParked, Depth: 3},
		{ID: "d5", Trigger: "t2", Seq: 7, Status: store.DeliveryFailed, Depth: 1},
	}
	return f
}

func TestDescend(t *testing.T) {
	t.Parallel()
	pruned := fanOut()
	pruned.horizon = 1
	tests := []struct {
		name       string
		r          *fakeTree
		seq        int64
		maxRows    int
		root       int64
		pruned     bool
		seqs       []int64
		deliveries []string
		truncated  bool
	}{
		{"from the root", fanOut(), 1, 0, 1, false, []int64{1, 2, 3, 4, 5, 6}, []string{"d1", "d2", "d3", "d4"}, false},
		{"from a leaf", fanOut(), 6, 0, 1, false, []int64{1, 2, 3, 4, 5, 6}, []string{"d1", "d2", "d3", "d4"}, false},
		{"from the middle", fanOut(), 3, 0, 1, false, []int64{1, 2, 3, 4, 5, 6}, []string{"d1", "d2", "d3", "d4"}, false},
		{"unrelated", fanOut(), 7, 0, 7, false, []int64{7}, []string{"d5"}, false},
		{"bounded inside a level", fanOut(), 1, 3, 1, false, []int64{1, 2, 3}, []string{"d1", "d2", "d3"}, true},
		{"bounded at a level", fanOut(), 1, 4, 1, false, []int64{1, 2, 3, 4}, []string{"d1", "d2", "d3"}, true},
		{"bound fits", fanOut(), 1, 6, 1, false, []int64{1, 2, 3, 4, 5, 6}, []string{"d1", "d2", "d3", "d4"}, false},
		{"pruned root", pruned, 6, 0, 2, true, []int64{2, 5, 6}, []string{"d3", "d4"}, false},
		{"pruned root asked", pruned, 2, 0, 2, true, []int64{2, 5, 6}, []string{"d3", "d4"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := Descend(context.Background(), tt.r, "s", tt.seq, tt.maxRows)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			for _, c := range tr.Commits {
				seqs = append(seqs, c.Seq)
			}
			var ds []string
			for _, d := range tr.Deliveries {
				ds = append(ds, d.ID)
			}
			if tr.Seq != tt.seq || tr.Root != tt.root || tr.Pruned != tt.pruned || !reflect.DeepEqual(seqs, tt.seqs) ||
				!reflect.DeepEqual(ds, tt.deliveries) || tr.Truncated != tt.truncated {
				t.Errorf("Descend(%d, %d) = seq %d root %d pruned %t rows %v deliveries %v truncated %t; want root %d pruned %t rows %v deliveries %v truncated %t",
					tt.seq, tt.maxRows, tr.Seq, tr.Root, tr.Pruned, seqs, ds, tr.Truncated, tt.root, tt.pruned, tt.seqs, tt.deliveries, tt.truncated)
			}
		})
	}
}
