package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/definitions"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
)

// benchRows is the size of the evaluator benchmark's log.
const benchRows = 50_000

// benchEnv is one process for a benchmark.
type benchEnv struct {
	log  *changelog.Log
	eng  *engine.Engine
	defs *definitions.Service
	reg  *functions.Registry
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	return newBenchEnvOn(b, "postgres")
}

// newBenchEnvOn starts a process on a fresh store of the driver.
func newBenchEnvOn(b *testing.B, driver string) *benchEnv {
	b.Helper()
	var st store.Store
	var err error
	if driver == "sqlite" {
		st, err = sqlite.Open(b.Context(), b.TempDir()+"/eddy.db")
	} else {
		st, err = postgres.Open(b.Context(), pgtest.NewDatabase(b))
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	e := &benchEnv{reg: &functions.Registry{}}
	e.log = changelog.New(st, changelog.Options{OnCommit: func(sp string, head int64) { e.eng.Notify(sp, head) }})
	e.eng = engine.New(e.log, e.reg, engine.Options{LeaseTTL: 10 * time.Second, Poll: 50 * time.Millisecond})
	e.defs = definitions.New(e.log, definitions.Options{Handlers: e.reg, Hooks: e.eng, Executor: e.eng})
	if _, err := e.log.EnsureSpace(b.Context(), space); err != nil {
		b.Fatal(err)
	}
	if err := e.eng.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = e.eng.Stop(context.Background())
		_ = e.log.Close()
	})
	return e
}

func (e *benchEnv) define(b *testing.B, kind, name, def string) {
	b.Helper()
	var err error
	if kind == "function" {
		_, _, err = e.defs.PutFunction(b.Context(), space, name, []byte(def))
	} else {
		_, _, err = e.defs.PutTrigger(b.Context(), space, name, []byte(def))
	}
	if err != nil {
		b.Fatalf("put %s %s: %v", kind, name, err)
	}
}

// BenchmarkEvaluator measures rows/s through the evaluator of a space
// with 10 enabled triggers on PostgreSQL, where 10% of the rows match one
// of them and get a delivery (an expr function returning nil), against
// pulling the same rows without judging them (the read it is built on).
func BenchmarkEvaluator(b *testing.B) {
	e := newBenchEnv(b)
	populate(b, e, benchRows)
	e.define(b, "function", "noop", `{"kind":"expr","code":"nil"}`)
	b.ResetTimer()
	for i := range b.N {
		pull := timePull(b, e)
		names := make([]string, 10)
		for j := range names {
			names[j] = fmt.Sprintf("t%d-%d", i, j)
			e.define(b, "trigger", names[j], fmt.Sprintf(`{"source":{"changes":{"types":["item"],"when":"entity.properties.k == %d"}},"function":"noop","start":"beginning","enabled":false}`, j))
		}
		waitOwned(b, e, names)
		start := time.Now()
		for _, name := range names {
			if _, err := e.eng.Enable(b.Context(), space, name, false); err != nil {
				b.Fatal(err)
			}
		}
		waitCursors(b, e, i, benchRows)
		took := time.Since(start)
		b.ReportMetric(float64(benchRows)/took.Seconds(), "rows/s")
		b.ReportMetric(float64(benchRows)/pull.Seconds(), "pull-rows/s")
		b.ReportMetric(pull.Seconds()/took.Seconds()*100, "%-of-pull")
		for _, name := range names {
			if err := e.defs.DeleteTrigger(b.Context(), space, name); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkCatchUpTypes measures catching up over a PostgreSQL log where
// one row in ten is a task: a trigger that names the type (the evaluator
// reads the changes of task rows only) against, in turn on the same log,
// one that names no type and filters by type in `when` (every row read
// whole, and `when` run on every row, where the match index skips the
// notes of the first). Neither matches a row. It reports rows/s of each
// and their ratio.
func BenchmarkCatchUpTypes(b *testing.B) {
	e := newBenchEnv(b)
	populateTyped(b, e, benchRows, func(i int) string {
		if i%10 == 0 {
			return "task"
		}
		return "note"
	})
	e.define(b, "function", "noop", `{"kind":"expr","code":"nil"}`)
	b.ResetTimer()
	var named, unnamed time.Duration
	for i := range b.N {
		named += catchUp(b, e, fmt.Sprintf("named-%d", i), `{"types":["task"],"when":"entity.properties.k == -1"}`)
		unnamed += catchUp(b, e, fmt.Sprintf("any-%d", i), `{"when":"row.type == 'task' && entity.properties.k == -1"}`)
	}
	rows := float64(benchRows * b.N)
	b.ReportMetric(rows/named.Seconds(), "named-rows/s")
	b.ReportMetric(rows/unnamed.Seconds(), "unnamed-rows/s")
	b.ReportMetric(unnamed.Seconds()/named.Seconds(), "named-speedup")
}

// catchUp saves a disabled trigger with the change source changes that
// starts at the beginning, enables it once this process holds its lease,
// waits until its cursor reaches benchRows, deletes it and returns how
// long the catch-up took.
func catchUp(b *testing.B, e *benchEnv, name, changes string) time.Duration {
	b.Helper()
	e.define(b, "trigger", name, `{"source":{"changes":`+changes+`},"function":"noop","start":"beginning","enabled":false}`)
	waitOwned(b, e, []string{name})
	start := time.Now()
	if _, err := e.eng.Enable(b.Context(), space, name, false); err != nil {
		b.Fatal(err)
	}
	polltest.Within(b, benchWait, name+" at the head", func() bool {
		st, err := e.log.Store().TriggerStateGet(b.Context(), space, name)
		if err != nil {
			b.Fatal(err)
		}
		return st.Cursor >= benchRows
	})
	took := time.Since(start)
	if err := e.defs.DeleteTrigger(b.Context(), space, name); err != nil {
		b.Fatal(err)
	}
	return took
}

// waitOwned waits until this process holds the lease of every named
// trigger, so enabling them starts their evaluation at once.
func waitOwned(b *testing.B, e *benchEnv, names []string) {
	b.Helper()
	for _, name := range names {
		polltest.Until(b, "the lease of "+name, func() bool {
			st, err := e.eng.Status(b.Context(), space, name)
			if err != nil {
				b.Fatal(err)
			}
			return st.Owner == e.eng.Owner()
		})
	}
}

// populate writes n item rows, k = i % 100, in batches.
func populate(b *testing.B, e *benchEnv, n int) {
	b.Helper()
	populateTyped(b, e, n, func(int) string { return "item" })
}

// populateTyped writes n rows of the types typeOf names, k = i % 100, in
// batches.
func populateTyped(b *testing.B, e *benchEnv, n int, typeOf func(i int) string) {
	b.Helper()
	const batch = 500
	for i := 0; i < n; i += batch {
		ms := make([]changelog.Mutation, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			ms = append(ms, put(typeOf(j), fmt.Sprintf("i%07d", j), map[string]any{"k": j % 100, "name": "item"}))
		}
		if _, err := e.log.Write(b.Context(), changelog.WriteRequest{Space: space, Mutations: ms,
			Provenance: store.Provenance{Actor: "owner", Via: "api"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// timePull reads the whole log through Pull.
func timePull(b *testing.B, e *benchEnv) time.Duration {
	b.Helper()
	start := time.Now()
	after := int64(0)
	for {
		page, err := e.log.Pull(b.Context(), space, after, 1000)
		if err != nil {
			b.Fatal(err)
		}
		if len(page.Commits) == 0 {
			return time.Since(start)
		}
		after = page.NextCursor
	}
}

// waitCursors waits until every trigger of round i reached seq.
func waitCursors(b *testing.B, e *benchEnv, i int, seq int64) {
	b.Helper()
	prefix := fmt.Sprintf("t%d-", i)
	polltest.Within(b, benchWait, fmt.Sprintf("the triggers of round %d at %d", i, seq), func() bool {
		states, err := e.log.Store().TriggerStateList(b.Context(), space)
		if err != nil {
			b.Fatal(err)
		}
		done := 0
		for _, st := range states {
			if strings.HasPrefix(st.Trigger, prefix) && st.Cursor >= seq {
				done++
			}
		}
		return done == 10
	})
}

// benchWait bounds a benchmark's waits for the engine to catch up.
const benchWait = 10 * time.Minute

// BenchmarkCommitToFunction measures the latency from a commit returning
// to the start of the function it triggers, at a steady write rate of 200
// commits/s, as p50 and p99: an in-process (go) function and a webhook on
// loopback, on PostgreSQL and SQLite.
func BenchmarkCommitToFunction(b *testing.B) {
	for _, driver := range []string{"postgres", "sqlite"} {
		for _, kind := range []string{"go", "webhook"} {
			b.Run(driver+"/"+kind, func(b *testing.B) { benchLatency(b, driver, kind) })
		}
	}
}

// latencyProbe records when the function saw each entity.
type latencyProbe struct {
	mu      sync.Mutex
	started map[string]time.Time
}

func (p *latencyProbe) saw(id string) {
	p.mu.Lock()
	p.started[id] = time.Now()
	p.mu.Unlock()
}

func benchLatency(b *testing.B, driver, kind string) {
	b.Helper()
	e := newBenchEnvOn(b, driver)
	probe := &latencyProbe{started: map[string]time.Time{}}
	switch kind {
	case "go":
		if err := e.reg.Register("probe", func(_ context.Context, in functions.Input) ([]changelog.Mutation, error) {
			probe.saw(in.Row.EntityID)
			return nil, nil
		}); err != nil {
			b.Fatal(err)
		}
		e.define(b, "function", "probe", `{"kind":"go","handler":"probe"}`)
	default:
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req functions.Request
			if err := json.NewDecoder(r.Body).Decode(&req); err == nil {
				probe.saw(req.Row.EntityID)
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		b.Cleanup(srv.Close)
		e.define(b, "function", "probe", `{"kind":"webhook","url":"`+srv.URL+`"}`)
	}
	e.define(b, "trigger", "probe", `{"source":{"changes":{"types":["item"]}},"function":"probe","delivery":{"ordering":"none","concurrency":16}}`)
	waitOwned(b, e, []string{"probe"})
	const n = 1000
	b.ResetTimer()
	for range b.N {
		committed := make(map[string]time.Time, n)
		tick := time.NewTicker(5 * time.Millisecond)
		for i := range n {
			<-tick.C
			id := fmt.Sprintf("i%d-%d", time.Now().UnixNano(), i)
			if _, err := e.log.Write(b.Context(), changelog.WriteRequest{Space: space,
				Mutations: []changelog.Mutation{put("item", id, map[string]any{"k": i})}, Provenance: store.Provenance{Actor: "owner", Via: "api"}}); err != nil {
				b.Fatal(err)
			}
			committed[id] = time.Now()
		}
		tick.Stop()
		polltest.Within(b, benchWait, "every function to start", func() bool {
			probe.mu.Lock()
			defer probe.mu.Unlock()
			started := 0
			for id := range committed {
				if _, ok := probe.started[id]; ok {
					started++
				}
			}
			return started == n
		})
		var lat []time.Duration
		probe.mu.Lock()
		for id, c := range committed {
			if s, ok := probe.started[id]; ok {
				lat = append(lat, max(s.Sub(c), 0))
			}
		}
		probe.mu.Unlock()
		slices.Sort(lat)
		if len(lat) < n {
			b.Fatalf("%d of %d functions started", len(lat), n)
		}
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}
