package engine_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// freshDrivers runs fn on SQLite and on PostgreSQL, fn's open giving a
// store on a database of its own at every call.
func freshDrivers(t *testing.T, fn func(t *testing.T, open opener)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, openSQLite) })
	t.Run("postgres", func(t *testing.T) {
		fn(t, func(t *testing.T) store.Store { t.Helper(); return openPostgres(pgtest.NewDatabase(t))(t) })
	})
}

// scenario is a random set of triggers and a random run of writes.
type scenario struct {
	triggers map[string]string
	steps    []changelog.WriteRequest
	// held, when set, are the steps written while the space's lock is
	// held (as by a slow evaluation), so the in-commit path cannot judge
	// them. Such a run settles after the first step only and then pauses
	// the evaluator until every step is written, so what the in-commit
	// path does not judge waits for a later group.
	held map[int]bool
}

// heldScenario is newScenario with some steps held (never the last) and
// with what depends on how rows are batched taken out: no coalescing
// (which merges a batch's deliveries per entity) and no causality cap
// (whose park rows land where the evaluator happens to write them).
func heldScenario(t *testing.T, seed uint64) scenario {
	t.Helper()
	sc := newScenario(seed)
	for name, raw := range sc.triggers {
		var def map[string]any
		if err := json.Unmarshal([]byte(raw), &def); err != nil {
			t.Fatal(err)
		}
		def["coalesce"] = false
		delete(def, "causalityCap")
		b, err := json.Marshal(def)
		if err != nil {
			t.Fatal(err)
		}
		sc.triggers[name] = string(b)
	}
	r := rand.New(rand.NewPCG(seed, 16))
	sc.held = map[int]bool{}
	for i := 1; i < len(sc.steps)-1; i++ {
		sc.held[i] = r.IntN(3) == 0
	}
	return sc
}

// whens are the filters scenarios draw from: plain, on the entity, on
// the row, and ones that raise errors on some rows.
var whens = []string{
	``,
	`entity != null && entity.properties.n > 5`,
	`entity != null && int(entity.properties.title) > 3`,
	`row.op == 'put'`,
	`entity.properties.n % 2 == 0`,
	`entity != null && 10 / entity.properties.n > 2`,
}

// newScenario draws triggers (types, ops incl. park, filters, coalesce,
// echo, causality caps) and writes (several mutations per request,
// echo rows authored by a trigger, chains of rows caused by earlier ones
// against a few roots, rows deep enough to be parked).
func newScenario(seed uint64) scenario {
	r := rand.New(rand.NewPCG(seed, 15))
	sc := scenario{triggers: map[string]string{}}
	names := []string{"t0", "t1", "t2", "t3", "t4"}
	for _, name := range names {
		src := map[string]any{}
		switch r.IntN(3) {
		case 0:
			src["types"] = []string{"a"}
		case 1:
			src["types"] = []string{"a", "b"}
		}
		if r.IntN(4) == 0 {
			src["ops"] = []string{"put", "patch", "park"}
		}
		if w := whens[r.IntN(len(whens))]; w != "" {
			src["when"] = w
		}
		def := map[string]any{"source": map[string]any{"changes": src}, "function": "noop",
			"coalesce": r.IntN(2) == 0, "echo": r.IntN(3) == 0}
		if r.IntN(3) == 0 {
			def["causalityCap"] = 2
		}
		raw, _ := json.Marshal(def)
		sc.triggers[name] = string(raw)
	}
	live := map[string]bool{}
	for i := range 24 {
		req := changelog.WriteRequest{Space: space, Provenance: store.Provenance{Actor: "owner", Via: "api"}}
		if r.IntN(3) == 0 {
			name := names[r.IntN(len(names))]
			req.Provenance = store.Provenance{Actor: "trigger:" + name, Via: "trigger", Trigger: name, Depth: r.IntN(5)}
			if i > 0 && r.IntN(3) > 0 {
				// A chain: caused by an earlier row (every write appends
				// at least one), counting against one of two roots.
				req.Provenance.CausedBy = 1 + int64(r.IntN(i))
				req.Provenance.Root = 1 + int64(r.IntN(int(min(req.Provenance.CausedBy, 2))))
				req.Provenance.Delivery = fmt.Sprint("d", i)
			}
		}
		for range 1 + r.IntN(4) {
			req.Mutations = append(req.Mutations, randomMutation(r, live))
		}
		sc.steps = append(sc.steps, req)
	}
	return sc
}

func randomMutation(r *rand.Rand, live map[string]bool) changelog.Mutation {
	typ := []string{"a", "b"}[r.IntN(2)]
	id := fmt.Sprintf("x%d", r.IntN(3))
	key := typ + "/" + id
	props := map[string]any{"n": r.IntN(12), "title": []string{"1", "7", "abc"}[r.IntN(3)]}
	switch {
	case live[key] && r.IntN(4) == 0:
		delete(live, key)
		return changelogDelete(typ, id)
	case live[key] && r.IntN(2) == 0:
		return patch(typ, id, props)
	}
	live[key] = true
	return put(typ, id, props)
}

// outcome is what a run of a scenario left: every row, every trigger's
// stance on it and every delivery, without the random delivery ids.
type outcome struct {
	rows       []string
	stances    []string
	deliveries []string
	groups     int64
}

// runScenario runs sc in a fresh process, settling after every write so
// that both paths judge the same batches (one write's rows).
func runScenario(t *testing.T, st store.Store, sc scenario, opts engine.Options) outcome {
	t.Helper()
	e := newEnv(t, st, opts)
	e.noop()
	names := slices.Sorted(mapsKeys(sc.triggers))
	for _, name := range names {
		e.trigger(name, sc.triggers[name])
	}
	e.settle()
	if sc.held != nil {
		runHeld(e, sc)
		e.settle()
	}
	for _, req := range sc.steps {
		if sc.held != nil {
			break
		}
		if _, err := e.log.Write(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		e.settle()
	}
	var out outcome
	for _, c := range e.commits(0) {
		id := c.EntityID
		if c.Op == changelog.OpPark {
			id = "(delivery)"
		}
		out.rows = append(out.rows, fmt.Sprintf("%d %s %s/%s by %s depth %d %s", c.Seq, c.Op, c.Type, id, c.Actor, c.Provenance.Depth, parkPayload(c)))
		for _, name := range names {
			s := e.stances(c.Seq)[name]
			d := ""
			if s.Delivery != nil {
				d = string(s.Delivery.Status)
			}
			out.stances = append(out.stances, fmt.Sprintf("%d %s %s %q %s", c.Seq, name, s.Stance, s.Error, d))
		}
	}
	for _, name := range names {
		for _, d := range e.deliveries(name) {
			out.deliveries = append(out.deliveries, fmt.Sprintf("%s %d %s/%s depth %d %s", d.Trigger, d.Seq, d.Entity.Type, d.Entity.ID, d.Depth, d.Status))
		}
	}
	slices.Sort(out.deliveries)
	out.groups, _ = engine.InCommitCounts(e.eng)
	return out
}

// runHeld writes the steps of a held scenario: the first, settled, then
// the others with the evaluator paused, holding the space's lock for the
// held ones, then resumes the evaluator.
func runHeld(e *env, sc scenario) {
	t := e.t
	t.Helper()
	write := func(req changelog.WriteRequest) {
		if _, err := e.log.Write(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	write(sc.steps[0])
	e.settle() // the evaluator builds the match index
	var resume func()
	e.eventually("the space runs", func() bool {
		var ok bool
		resume, ok = engine.PauseEvaluator(e.eng, space)
		return ok
	})
	for i := 1; i < len(sc.steps); i++ {
		if !sc.held[i] {
			write(sc.steps[i])
			continue
		}
		release, ok := engine.HoldSpace(e.eng, space)
		if !ok {
			t.Fatal("the space stopped running")
		}
		write(sc.steps[i])
		release()
	}
	resume()
}

func parkPayload(c store.Commit) string {
	if c.Op != changelog.OpPark {
		return ""
	}
	return string(c.Payload)
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The in-commit path and the evaluator agree exactly: random triggers
// (coalesce, filters that error, echo, engine ops, causality caps) over
// random writes (several commits per write, echo rows, chains past the
// causal budget, rows deep enough to be parked with a park row) leave the same rows, the same stance of
// every trigger on every row and the same deliveries (trigger, seq,
// entity, depth, status) whether the rows were judged inside their
// commit or by the evaluator after it.
func TestInCommitAgreesWithEvaluator(t *testing.T) {
	freshDrivers(t, func(t *testing.T, open opener) {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				sc := newScenario(seed)
				opts := testOptions()
				opts.SpaceCap = 3
				opts.SpaceBudget = 4
				in := runScenario(t, open(t), sc, opts)
				opts.InCommitCandidates = -1
				ev := runScenario(t, open(t), sc, opts)
				if in.groups == 0 {
					t.Fatal("the in-commit path judged no group")
				}
				if ev.groups != 0 {
					t.Fatalf("the evaluator-only run judged %d groups in their commit", ev.groups)
				}
				t.Logf("%d of %d writes judged in their commit", in.groups, len(sc.steps))
				agree(t, "rows", in.rows, ev.rows)
				agree(t, "stances", in.stances, ev.stances)
				agree(t, "deliveries", in.deliveries, ev.deliveries)
			})
		}
	})
}

// The in-commit path agrees with the evaluator when groups it could not
// judge (the space's lock held while they committed) are judged later,
// with a following group's rows in its commit or by the evaluator,
// whichever comes first: the same rows, stances and deliveries as the
// evaluator alone.
func TestInCommitAgreesWithEvaluatorAfterSkips(t *testing.T) {
	freshDrivers(t, func(t *testing.T, open opener) {
		for seed := uint64(1); seed <= 2; seed++ {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				sc := heldScenario(t, seed)
				opts := testOptions()
				in := runScenario(t, open(t), sc, opts)
				opts.InCommitCandidates = -1
				ev := runScenario(t, open(t), sc, opts)
				if ev.groups != 0 {
					t.Fatalf("the evaluator-only run judged %d groups in their commit", ev.groups)
				}
				t.Logf("%d of %d writes judged in their commit, %d held", in.groups, len(sc.steps), len(slices.Collect(func(yield func(int) bool) {
					for i, h := range sc.held {
						if h && !yield(i) {
							return
						}
					}
				})))
				agree(t, "rows", in.rows, ev.rows)
				agree(t, "stances", in.stances, ev.stances)
				agree(t, "deliveries", in.deliveries, ev.deliveries)
			})
		}
	})
}

// agree fails the test at the first line where in-commit and evaluator
// differ.
func agree(t *testing.T, what string, in, ev []string) {
	t.Helper()
	for i := range max(len(in), len(ev)) {
		a, b := at(in, i), at(ev, i)
		if a != b {
			t.Fatalf("%s differ at %d:\n  in commit: %s\n  evaluator: %s\n(in commit %d lines, evaluator %d)\n%s",
				what, i, a, b, len(in), len(ev), strings.Join(in, "\n"))
		}
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(none)"
}

// Past the in-commit budget (candidates or CEL cost) a write's rows are
// left to the evaluator, which delivers them all the same.
func TestInCommitBudgetFallsBack(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts func(*engine.Options)
	}{
		{"candidates", func(o *engine.Options) { o.InCommitCandidates = 2 }},
		{"cost", func(o *engine.Options) { o.InCommitCost = 1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := testOptions()
			tc.opts(&opts)
			e := newEnv(t, openSQLite(t), opts)
			e.noop()
			names := []string{"p", "q", "r"}
			for _, name := range names {
				e.trigger(name, `{"source":{"changes":{"types":["a"],"when":"entity != null && entity.properties.n >= 0"}},"function":"noop"}`)
			}
			e.settle()
			for _, name := range names {
				e.eventually("this process leases "+name, func() bool { return e.status(name).Owner == e.eng.Owner() })
			}
			// A write may find the evaluator busy, or a trigger not yet
			// loaded for the in-commit path (a lease taken a moment
			// late, under load), and be judged in its commit with fewer
			// candidates: write until the budget turns one away, and
			// check that the one it turned away was not judged there.
			var seqs []int64
			skipped := false
			for i := 0; i < 50 && !skipped; i++ {
				groups0, skips0 := engine.InCommitCounts(e.eng)
				seqs = append(seqs, e.write(put("a", fmt.Sprint("x", i), map[string]any{"n": i})))
				e.settle()
				groups, skips := engine.InCommitCounts(e.eng)
				if skipped = skips > skips0; skipped && groups != groups0 {
					t.Fatalf("write %d: left by the budget and judged in its commit (%d groups)", i, groups-groups0)
				}
			}
			if !skipped {
				t.Fatal("no write was left by the budget")
			}
			for _, name := range names {
				for _, seq := range seqs {
					if d := e.delivery(name, seq); d.Status != store.DeliverySucceeded {
						t.Fatalf("delivery of %s for %d: %+v", name, seq, d)
					}
				}
			}
		})
	}
}

// A group the in-commit path could not judge (the space's lock was held)
// is judged with the next group's rows, in that group's commit, instead
// of being left to the evaluator: with the evaluator stopped, every row
// of the two skipped groups and of the next one is delivered once, and
// the cursors move past all three. Two triggers, one filtering, so each
// trigger's rows are its own.
func TestInCommitTakesInSkippedGroups(t *testing.T) {
	freshDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), testOptions())
		e.noop()
		e.trigger("p", `{"source":{"changes":{"types":["a"]}},"function":"noop"}`)
		e.trigger("q", `{"source":{"changes":{"types":["a"],"when":"entity != null && entity.properties.n > 1"}},"function":"noop"}`)
		// A first row makes the evaluator build the match index, which
		// the in-commit path needs and never builds itself.
		e.write(put("a", "first", map[string]any{"n": 0}))
		e.settle()
		e.eventually("the space runs", func() bool { return engine.StopEvaluator(e.eng, space) })
		release, ok := engine.HoldSpace(e.eng, space)
		if !ok {
			t.Fatal("the space stopped running")
		}
		before, _ := engine.InCommitCounts(e.eng)
		x := e.write(put("a", "x", map[string]any{"n": 1}))
		y := e.write(put("a", "y", map[string]any{"n": 2}), put("a", "w", map[string]any{"n": 0}))
		release()
		if after, _ := engine.InCommitCounts(e.eng); after != before {
			t.Fatalf("%d groups judged in their commit while the space was held", after-before)
		}
		// A lease round that waited for the lock may take it first and
		// skip the next group too: write until one group is judged.
		zs := []int64{}
		for i := 0; ; i++ {
			zs = append(zs, e.write(put("a", fmt.Sprint("z", i), map[string]any{"n": 3})))
			if after, _ := engine.InCommitCounts(e.eng); after > before {
				break
			}
			if i == 50 {
				t.Fatal("50 groups in a row were not judged in their commit")
			}
		}
		e.settle()
		for _, seq := range append([]int64{x, y - 1, y}, zs...) {
			if d := e.delivery("p", seq); d.Status != store.DeliverySucceeded {
				t.Fatalf("p's delivery for %d: %+v", seq, d)
			}
		}
		for _, seq := range append([]int64{y - 1}, zs...) {
			if d := e.delivery("q", seq); d.Status != store.DeliverySucceeded {
				t.Fatalf("q's delivery for %d: %+v", seq, d)
			}
		}
		if n, want := len(e.deliveries("q")), 1+len(zs); n != want {
			t.Fatalf("q has %d deliveries, want %d (y and the z rows)", n, want)
		}
	})
}

// A write never waits for the evaluator: with the space's evaluator lock
// held (a slow evaluation), writes commit at once; their rows are
// delivered once the evaluator gets the lock back.
func TestInCommitNeverWaitsForTheEvaluator(t *testing.T) {
	t.Parallel()
	e := newEnv(t, openSQLite(t), testOptions())
	e.noop()
	e.trigger("p", `{"source":{"changes":{"types":["a"]}},"function":"noop"}`)
	e.settle()
	var release func()
	e.eventually("the space runs", func() bool {
		var ok bool
		release, ok = engine.HoldSpace(e.eng, space)
		return ok
	})
	before, _ := engine.InCommitCounts(e.eng)
	seq := e.write(put("a", "x", map[string]any{"n": 1}))
	seq2 := e.write(put("a", "y", map[string]any{"n": 2}))
	if after, _ := engine.InCommitCounts(e.eng); after != before {
		release()
		t.Fatalf("%d groups judged in their commit while the evaluator held the space", after-before)
	}
	release()
	e.settle()
	e.delivery("p", seq)
	e.delivery("p", seq2)
}

// Many writers into one space at once, with the evaluator and the lease
// rounds running: every row each trigger matches gets exactly one
// delivery, whichever path judged it.
func TestInCommitConcurrentWriters(t *testing.T) {
	freshDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), testOptions())
		e.noop()
		e.trigger("all", `{"source":{"changes":{"types":["a"]}},"function":"noop"}`)
		e.trigger("big", `{"source":{"changes":{"types":["a"],"when":"entity != null && entity.properties.n > 5"}},"function":"noop"}`)
		e.settle()
		const writers, each = 6, 10
		errs := make(chan error, writers)
		for w := range writers {
			go func() {
				for i := range each {
					_, err := e.log.Write(t.Context(), changelog.WriteRequest{Space: space,
						Mutations:  []changelog.Mutation{put("a", fmt.Sprintf("w%d-%d", w, i), map[string]any{"n": i})},
						Provenance: store.Provenance{Actor: "owner", Via: "api"}})
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		e.settle()
		want := map[string][]int64{}
		for _, c := range e.commits(0) {
			if c.Type != "a" {
				continue
			}
			want["all"] = append(want["all"], c.Seq)
			if bigN(c) {
				want["big"] = append(want["big"], c.Seq)
			}
		}
		for _, name := range []string{"all", "big"} {
			var got []int64
			for _, d := range e.deliveries(name) {
				got = append(got, d.Seq)
			}
			slices.Sort(got)
			if !slices.Equal(got, want[name]) {
				t.Fatalf("%s: deliveries for rows %v, want %v", name, got, want[name])
			}
		}
	})
}

func bigN(c store.Commit) bool {
	var p struct{ N int }
	_ = json.Unmarshal(c.Changes[0].After.Properties, &p)
	return p.N > 5
}

// A lease lost to another process fences the in-commit advance: the
// write still commits (run again without judging), and this process
// writes no delivery and no cursor for the trigger any more.
func TestInCommitFencedByLostLease(t *testing.T) {
	freshDrivers(t, func(t *testing.T, open opener) {
		st := open(t)
		e := newEnv(t, st, testOptions())
		e.noop()
		e.trigger("p", `{"source":{"changes":{"types":["a"]}},"function":"noop"}`)
		first := e.write(put("a", "x", map[string]any{"n": 1}))
		e.settle()
		e.delivery("p", first)
		// Another process takes the lease over (as if this one's had
		// expired): the epoch moves on.
		later := time.Now().Add(time.Hour)
		if _, ok, err := st.LeaseAcquire(t.Context(), store.LeaseParams{Space: space, Trigger: "p", Owner: "thief", Now: later, TTL: time.Hour}); err != nil || !ok {
			t.Fatalf("steal the lease: ok %v, %v", ok, err)
		}
		for i := range 3 {
			seq := e.write(put("a", fmt.Sprint("y", i), map[string]any{"n": 2}))
			stt, err := st.TriggerStateGet(t.Context(), space, "p")
			if err != nil {
				t.Fatal(err)
			}
			if stt.Cursor != first || stt.Owner != "thief" {
				t.Fatalf("after the write of %d the state is %+v, want cursor %d held by thief", seq, stt, first)
			}
			ds, err := st.DeliveriesAt(t.Context(), space, seq)
			if err != nil || len(ds) != 0 {
				t.Fatalf("deliveries of %d: %+v, %v", seq, ds, err)
			}
		}
	})
}

// Stopping the engine while writers commit: no write fails, nothing
// races, and writes after Stop judge nothing.
func TestInCommitStopDuringWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t, openSQLite(t), testOptions())
	e.noop()
	e.trigger("p", `{"source":{"changes":{"types":["a"]}},"function":"noop"}`)
	e.settle()
	const writers = 4
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range 15 {
				_, err := e.log.Write(t.Context(), changelog.WriteRequest{Space: space,
					Mutations:  []changelog.Mutation{put("a", fmt.Sprintf("w%d-%d", w, i), map[string]any{"n": i})},
					Provenance: store.Provenance{Actor: "owner", Via: "api"}})
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	if err := e.eng.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	groups, _ := engine.InCommitCounts(e.eng)
	e.write(put("a", "after", map[string]any{"n": 1}))
	if after, _ := engine.InCommitCounts(e.eng); after != groups {
		t.Fatalf("a write after Stop was judged in its commit")
	}
}
