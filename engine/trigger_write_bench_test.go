package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/store"
)

// BenchmarkWriteWithTrigger measures writers (1, and 16 sharing group
// commits) committing single puts back to back while a trigger leased by
// this process delivers each one to a go function (in-commit judging,
// the delivery row, the call and its completion), against the same
// writers' puts of a type no trigger watches, in turn on the same store.
// It reports both rates, the process's CPU per commit of each, and their
// ratio, on SQLite and PostgreSQL.
func BenchmarkWriteWithTrigger(b *testing.B) {
	for _, driver := range []string{"sqlite", "postgres"} {
		for _, writers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/writers=%d", driver, writers), func(b *testing.B) { benchWriteWithTrigger(b, driver, writers) })
		}
	}
}

func benchWriteWithTrigger(b *testing.B, driver string, writers int) { //nolint:thelper // a benchmark body
	e := newBenchEnvOn(b, driver)
	var called atomic.Int64
	if err := e.reg.Register("count", func(context.Context, functions.Input) ([]changelog.Mutation, error) {
		called.Add(1)
		return nil, nil
	}); err != nil {
		b.Fatal(err)
	}
	e.define(b, "function", "count", `{"kind":"go","handler":"count"}`)
	e.define(b, "trigger", "count", `{"source":{"changes":{"types":["item"]}},"function":"count","delivery":{"ordering":"none","concurrency":16}}`)
	waitOwned(b, e, []string{"count"})
	const n = 2000
	var plain, triggered phase
	b.ResetTimer()
	for i := range b.N {
		plain.add(b, e, writers, "note", fmt.Sprintf("p%d-", i), n, func() bool { return true })
		want := called.Load() + n
		triggered.add(b, e, writers, "item", fmt.Sprintf("t%d-", i), n, func() bool { return called.Load() >= want })
	}
	b.ReportMetric(plain.rate(), "plain-commits/s")
	b.ReportMetric(triggered.rate(), "triggered-commits/s")
	b.ReportMetric(plain.cpuPer(), "plain-cpu-µs/commit")
	b.ReportMetric(triggered.cpuPer(), "triggered-cpu-µs/commit")
	b.ReportMetric(triggered.rate()/plain.rate(), "triggered÷plain")
}

// phase sums the commits, wall time and process CPU of one kind of write.
type phase struct {
	commits   int
	wall, cpu time.Duration
}

// add writes n puts of typ with writers goroutines, each taking the
// next put until none is left, waits until done, and adds them to p.
func (p *phase) add(b *testing.B, e *benchEnv, writers int, typ, prefix string, n int, done func() bool) {
	b.Helper()
	start, cpu := time.Now(), cpuTime(b)
	var next atomic.Int64
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				if _, err := e.log.Write(b.Context(), changelog.WriteRequest{Space: space,
					Mutations:  []changelog.Mutation{put(typ, fmt.Sprintf("%s%d", prefix, i), map[string]any{"k": i})},
					Provenance: store.Provenance{Actor: "owner", Via: "api"}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	polltest.Within(b, benchWait, "every delivery", done)
	p.commits += n
	p.wall += time.Since(start)
	p.cpu += cpuTime(b) - cpu
}

func (p *phase) rate() float64   { return float64(p.commits) / p.wall.Seconds() }
func (p *phase) cpuPer() float64 { return float64(p.cpu.Microseconds()) / float64(p.commits) }
