package views

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// benchViews returns n views over task: kind "field" is fieldEquals on
// project = pK, "cel" a CEL filter with an equality guard and more.
func benchViews(tb testing.TB, kind string, n int) []*Definition {
	tb.Helper()
	defs := make([]*Definition, n)
	for i := range defs {
		filter := fmt.Sprintf(`{"fieldEquals":{"field":"project","expected":"p%d"}}`, i)
		if kind == "cel" {
			filter = fmt.Sprintf(`{"cel":"entity.properties.project == 'p%d' && entity.properties.n > 0"}`, i)
		}
		defs[i] = mustView(tb, fmt.Sprintf("v%d", i), `{"version":"v1","types":["task"],"filter":`+filter+`}`)
	}
	return defs
}

// benchCommits returns commits that each move a task from one random
// project of n to another.
func benchCommits(n int) []store.Commit {
	rng := rand.New(rand.NewPCG(1, 2))
	rec := func(p int) *store.Record {
		props, _ := json.Marshal(map[string]any{"project": fmt.Sprintf("p%d", p), "n": 3, "title": "a task with a title"})
		return &store.Record{Type: "task", ID: "t1", Version: 7, Kind: store.KindLive, Properties: props}
	}
	out := make([]store.Commit, 256)
	for i := range out {
		ch := store.Change{Kind: store.ChangeUpdated, Type: "task", ID: "t1", Version: 8, Before: rec(rng.IntN(n)), After: rec(rng.IntN(n))}
		out[i] = store.Commit{Row: store.Row{Seq: int64(i + 1)}, Changes: []store.Change{ch}}
	}
	return out
}

// BenchmarkProjection measures the projector's cost per commit through
// the index with 1, 100 and 10,000 views on one space, and judging every
// view without the index for comparison. ns/op is per commit.
func BenchmarkProjection(b *testing.B) {
	for _, kind := range []string{"field", "cel"} {
		for _, n := range []int{1, 100, 10_000} {
			x := NewIndex(benchViews(b, kind, n))
			commits := benchCommits(n)
			b.Run(fmt.Sprintf("%s/index/views=%d", kind, n), func(b *testing.B) {
				for i := range b.N {
					judgeCommit(x, commits[i%len(commits)])
				}
			})
			if n == 10_000 && kind == "field" {
				b.Run(fmt.Sprintf("%s/naive/views=%d", kind, n), func(b *testing.B) {
					for i := range b.N {
						c := &commits[i%len(commits)]
						x.judgeNaive(&c.Changes[0])
					}
				})
			}
		}
	}
}

// TestProjectionScales is the ratio the issue asks for, measured in one
// run: the index keeps 10,000 views within 10x of one view per commit.
// It asserts nothing (timings are not assertions on a loaded machine); it
// logs the ratio, and runs only with -v -run ProjectionScales -bench.
func TestProjectionScales(t *testing.T) {
	if !testing.Verbose() || testing.Short() {
		t.Skip("a measurement: run with -v")
	}
	for _, kind := range []string{"field", "cel"} {
		per := map[int]time.Duration{}
		for _, n := range []int{1, 100, 10_000} {
			x := NewIndex(benchViews(t, kind, n))
			commits := benchCommits(n)
			r := testing.Benchmark(func(b *testing.B) { //nolint:thelper // a benchmark body
				for i := range b.N {
					judgeCommit(x, commits[i%len(commits)])
				}
			})
			per[n] = time.Duration(r.NsPerOp())
		}
		t.Logf("%s views: 1: %v/commit, 100: %v, 10000: %v; 10000/1 = %.2fx", kind, per[1], per[100], per[10_000],
			float64(per[10_000])/float64(per[1]))
	}
}
