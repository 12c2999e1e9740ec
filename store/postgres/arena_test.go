package postgres

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// TestRawTailReadAllocatesLittle: the reads of a live tail (an evaluator
// woken by every commit, asking for a whole page past its cursor and
// finding one row or none) must not each set aside room for a whole page:
// an arena sized for 8,000 rows of the last page's size made every such
// read allocate megabytes, and the collector's work showed as a 20 ms
// tail in commit-to-function latency.
func TestRawTailReadAllocatesLittle(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	mustSpace(t, s, "s")
	var cs []appended
	for seq := int64(1); seq <= 300; seq++ {
		c, recs := putCommit(seq, nil, rec("task", fmt.Sprint("t", seq), seq, `{"title":"a row long enough to count"}`), "u", "")
		cs = append(cs, appended{c, recs})
	}
	write(t, s, "s", cs...)
	// A full page first, so the next reads know the rows' size.
	if got, err := s.RawCommits(ctx, store.CommitsParams{Space: "s", Limit: 8000}); err != nil || len(got) != 300 {
		t.Fatalf("full page: %d rows, %v", len(got), err)
	}
	for _, after := range []int64{299, 300} {
		var before, done runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := s.RawCommits(ctx, store.CommitsParams{Space: "s", After: after, Limit: 8000})
		runtime.ReadMemStats(&done)
		if err != nil || len(got) != int(300-after) {
			t.Fatalf("after %d: %d rows, %v", after, len(got), err)
		}
		if n := done.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("a tail read after %d allocated %d bytes, want well under a page's", after, n)
		}
	}
}

// TestRawPageAllocatesPerPage: a page of raw commits costs allocations
// per page (the arena's blocks, the rows, the strings), not per row: the
// 300 rows of a page read whole or partly (ChangesOf) take fewer
// allocations than rows.
func TestRawPageAllocatesPerPage(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	mustSpace(t, s, "s")
	var cs []appended
	for seq := int64(1); seq <= 300; seq++ {
		typ := "note"
		if seq%10 == 0 {
			typ = "task"
		}
		c, recs := putCommit(seq, nil, rec(typ, fmt.Sprint("e", seq), seq, `{"title":"a row"}`), "u", "")
		cs = append(cs, appended{c, recs})
	}
	write(t, s, "s", cs...)
	for _, only := range [][]string{nil, {"task"}} {
		p := store.CommitsParams{Space: "s", Limit: 1000, NoReceipts: true, ChangesOf: only}
		if _, err := s.RawCommits(ctx, p); err != nil { // warm the statement cache
			t.Fatal(err)
		}
		var before, done runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := s.RawCommits(ctx, p)
		runtime.ReadMemStats(&done)
		if err != nil || len(got) != 300 {
			t.Fatalf("ChangesOf %q: %d rows, %v", only, len(got), err)
		}
		if n := done.Mallocs - before.Mallocs; n >= 300 {
			t.Errorf("ChangesOf %q: a page of 300 rows took %d allocations, want fewer than its rows", only, n)
		}
	}
}
