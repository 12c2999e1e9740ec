package engine_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

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
		fn(t, func(t *testing.T) store.Store { return openPostgres(pgtest.NewDatabase(t))(t) })
	})
}

// scenario is a random set of triggers and a random run of writes.
type scenario struct {
	triggers map[string]string
	steps    []changelog.WriteRequest
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
// echo rows authored by a trigger, rows deep enough to be parked).
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
	for range 24 {
		req := changelog.WriteRequest{Space: space, Provenance: store.Provenance{Actor: "owner", Via: "api"}}
		if r.IntN(4) == 0 {
			name := names[r.IntN(len(names))]
			req.Provenance = store.Provenance{Actor: "trigger:" + name, Via: "trigger", Trigger: name, Depth: r.IntN(5)}
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
	for _, req := range sc.steps {
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
				d = s.Delivery.Status
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
// random writes (several commits per write, echo rows, rows deep enough
// to be parked with a park row) leave the same rows, the same stance of
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
