package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/internal/benchproc"
	"github.com/eddy-run/eddy/store"
)

// BenchRows is the size of the space the read benchmarks scan:
// EDDY_BENCH_ROWS, default 1,000,000.
func BenchRows() int {
	if n, err := strconv.Atoi(os.Getenv("EDDY_BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// BenchWrites measures commits/s through changelog.Log.Write: writers
// goroutines spread b.N single-mutation requests over spaces spaces.
func BenchWrites(b *testing.B, st store.Store, writers, spaces int) {
	b.Helper()
	BenchWritesOptions(b, st, writers, spaces, changelog.Options{})
}

// BenchWritesOptions is BenchWrites with the Log built from opts; it also
// reports the mean requests per group transaction as requests/group.
func BenchWritesOptions(b *testing.B, st store.Store, writers, spaces int, opts changelog.Options) {
	b.Helper()
	ctx := context.Background()
	var groups, requests atomic.Int64
	observe := opts.Observe
	opts.Observe = func(s changelog.GroupStats) {
		groups.Add(1)
		requests.Add(int64(s.Requests))
		if observe != nil {
			observe(s)
		}
	}
	defer func() {
		if g := groups.Load(); g > 0 {
			b.ReportMetric(float64(requests.Load())/float64(g), "requests/group")
		}
	}()
	lg := changelog.New(st, opts)
	names := make([]string, spaces)
	for i := range names {
		names[i] = fmt.Sprintf("bench-%d", i)
		if _, err := lg.EnsureSpace(ctx, names[i]); err != nil {
			b.Fatal(err)
		}
	}
	RunWriters(b, writers, func(i int64) error {
		req := changelog.WriteRequest{
			Space:      names[int(i)%spaces],
			Mutations:  []changelog.Mutation{benchPut(i)},
			Provenance: store.Provenance{Actor: "bench", Via: "api"},
		}
		_, err := lg.Write(ctx, req)
		return err
	})
}

// RunWriters times b.N calls of op, numbered 1 to b.N, split over writers
// goroutines that each take the next number until none is left. The
// timer covers only the calls. An error stops the writer that met it;
// once all have stopped, the first error fails b. It reports calls per
// second as commits/s and the process's CPU time (user and system) per
// call as cpu-ns/commit.
func RunWriters(b *testing.B, writers int, op func(i int64) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	b.ResetTimer()
	user0, sys0 := benchproc.CPUNow()
	for range writers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if err := op(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	user1, sys1 := benchproc.CPUNow()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	b.ReportMetric(float64(user1-user0+sys1-sys0)/float64(b.N), "cpu-ns/commit")
}

// benchPut is the mutation the write benchmarks append: a new entity with
// two properties; every tenth one is a "task", the rest "note".
func benchPut(i int64) changelog.Mutation {
	typ := "note"
	if i%10 == 0 {
		typ = "task"
	}
	props, _ := json.Marshal(map[string]any{"n": i, "title": "row " + strconv.FormatInt(i, 10)})
	return changelog.Mutation{Op: changelog.OpPut, Type: typ, EntityID: "e" + strconv.FormatInt(i, 10), Properties: props}
}

// Populate appends n commits to space (created if needed) in batches of
// 1,000 mutations per request; see benchPut for their shape. Every 100th
// commit patches the entity "hot", so an entity-scoped read has rows.
func Populate(tb testing.TB, lg *changelog.Log, space string, n int) {
	tb.Helper()
	ctx := context.Background()
	if _, err := lg.EnsureSpace(ctx, space); err != nil {
		tb.Fatal(err)
	}
	sp, err := lg.Space(ctx, space)
	if err != nil {
		tb.Fatal(err)
	}
	for i := sp.Head; i < int64(n); {
		batch := make([]changelog.Mutation, 0, 1000)
		for ; i < int64(n) && len(batch) < cap(batch); i++ {
			m := benchPut(i + 1)
			if (i+1)%100 == 0 {
				m = changelog.Mutation{Op: changelog.OpPatch, Type: "task", EntityID: "hot", Patch: json.RawMessage(`{"n":` + strconv.FormatInt(i+1, 10) + `}`)}
				if i+1 == 100 {
					m = changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: "hot", Properties: json.RawMessage(`{"n":100}`)}
				}
			}
			batch = append(batch, m)
		}
		req := changelog.WriteRequest{Space: space, Mutations: batch, Provenance: store.Provenance{Actor: "loader", Via: "api"}}
		if _, err := lg.Write(ctx, req); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchReads populates the space "big" of st with BenchRows commits (see
// Populate), then runs the read benchmarks: baseline=raw-scan, where scan
// is the driver's raw ordered read of every commit row of "big" returning
// how many it read (the physical floor of a reader); pull (BenchPull); and
// history (BenchHistoryFiltered).
func BenchReads(b *testing.B, st store.Store, scan func(b *testing.B) int) {
	b.Helper()
	lg := changelog.New(st, changelog.Options{})
	Populate(b, lg, "big", BenchRows())
	b.Run("baseline=raw-scan", func(b *testing.B) {
		total := 0
		for b.Loop() {
			total += scan(b)
		}
		b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("pull", func(b *testing.B) { BenchPull(b, lg, "big") })
	b.Run("pull-encoded=decoded", func(b *testing.B) { BenchPullEncoded(b, lg, "big", false) })
	b.Run("pull-encoded=raw", func(b *testing.B) { BenchPullEncoded(b, lg, "big", true) })
	b.Run("history", func(b *testing.B) { BenchHistoryFiltered(b, lg, "big") })
}

// BenchPull measures changes/s pulling the whole space in pages of 1,000.
func BenchPull(b *testing.B, lg *changelog.Log, space string) {
	b.Helper()
	ctx := context.Background()
	total := 0
	for b.Loop() {
		for cursor, more := int64(0), true; more; {
			page, err := lg.Pull(ctx, space, cursor, 1000)
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range page.Commits {
				total += len(c.Changes)
			}
			cursor, more = page.NextCursor, page.HasMore
		}
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "changes/s")
}

// BenchPullEncoded measures rows/s pulling the whole space in pages of
// 1,000 and encoding each page as JSON, as GET .../log answers it: with
// raw, through PullRawWith and RawPullPage.AppendJSON (the stored JSON
// passed through, each page's memory then recycled, as the server does),
// else through Pull and json.Marshal (every commit decoded, then encoded
// again).
func BenchPullEncoded(b *testing.B, lg *changelog.Log, space string, raw bool) {
	b.Helper()
	ctx := context.Background()
	rows := 0
	var buf []byte
	for b.Loop() {
		for cursor, more := int64(0), true; more; {
			var n int
			if raw {
				p, err := lg.PullRawWith(ctx, space, cursor, 1000, changelog.PullOptions{ReadAhead: true, Recycle: true})
				if err != nil {
					b.Fatal(err)
				}
				buf = p.AppendJSON(buf[:0])
				lg.RecycleRaw(p.Commits)
				n, cursor, more = len(p.Commits), p.NextCursor, p.HasMore
			} else {
				p, err := lg.Pull(ctx, space, cursor, 1000)
				if err != nil {
					b.Fatal(err)
				}
				if buf, err = json.Marshal(p); err != nil {
					b.Fatal(err)
				}
				n, cursor, more = len(p.Commits), p.NextCursor, p.HasMore
			}
			rows += n
		}
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchHistoryFiltered measures one filtered history page of 100 from the
// head, for a few filters of different selectivity.
func BenchHistoryFiltered(b *testing.B, lg *changelog.Log, space string) {
	b.Helper()
	ctx := context.Background()
	filters := []struct {
		name string
		f    changelog.Filter
	}{
		{"none", changelog.Filter{}},
		{"types=task(10%)", changelog.Filter{Types: []string{"task"}}},
		{"entity=task/hot(1%)", changelog.Filter{EntityType: "task", EntityID: "hot"}},
		{"excludeTypes=note,task(0%)", changelog.Filter{ExcludeTypes: []string{"note", "task"}}},
		{"q=e99(text)", changelog.Filter{Q: "e99"}},
	}
	for _, tc := range filters {
		b.Run(tc.name, func(b *testing.B) {
			rows := 0
			for b.Loop() {
				page, err := lg.History(ctx, space, 0, tc.f, 100)
				if err != nil {
					b.Fatal(err)
				}
				rows += len(page.Rows)
			}
			b.ReportMetric(float64(rows)/float64(b.N), "rows/page")
		})
	}
}
