package triggers

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/cel-go/cel"

	"github.com/eddy-run/eddy/store"
)

func mustTrigger(tb testing.TB, name, changes string) *Trigger {
	tb.Helper()
	tr, err := ParseTrigger(name, []byte(`{"source": {"changes": `+changes+`}, "function": "f"}`))
	if err != nil {
		tb.Fatalf("trigger %s: %v", name, err)
	}
	return tr
}

func TestIndexMatch(t *testing.T) {
	t.Parallel()
	ts := []*Trigger{
		mustTrigger(t, "all", `{}`),
		mustTrigger(t, "tasks", `{"types": ["task"]}`),
		mustTrigger(t, "notes", `{"types": ["note"]}`),
		mustTrigger(t, "fires", `{"ops": ["fire"]}`),
		mustTrigger(t, "owner-only", `{"actors": ["owner"]}`),
		mustTrigger(t, "not-owner", `{"excludeActors": ["owner"]}`),
		mustTrigger(t, "done", `{"types": ["task"], "when": "entity.properties.status == 'done'"}`),
		mustTrigger(t, "done-guarded", `{"when": "entity != null && entity.properties.status == 'done'"}`),
		mustTrigger(t, "p1", `{"when": "entity.properties.project == 'p1' && entity.properties.n == 2"}`),
		mustTrigger(t, "broken", `{"when": "int(entity.properties.status) > 0"}`),
	}
	ts = append(ts, &Trigger{Name: "cron", Source: Source{Cron: &CronSource{}}})
	x := NewIndex(ts)
	if x.Len() != 10 {
		t.Fatalf("Len = %d, want 10 (cron ignored)", x.Len())
	}
	row := func(typ, op, actor string) *store.Row {
		return &store.Row{Seq: 9, Type: typ, Op: op, Actor: actor, EntityID: "e", Payload: json.RawMessage(`{}`)}
	}
	rec := func(props string) *store.Record {
		return &store.Record{Type: "task", ID: "e", Version: 9, Properties: json.RawMessage(props)}
	}
	tests := []struct {
		name string
		in   Subject
		want string
	}{
		{"task put", Subject{Row: row("task", "put", "owner"), Entity: rec(`{"status":"done","project":"p1","n":2}`)},
			"all broken:error done done-guarded owner-only p1 tasks"},
		{"note by bot", Subject{Row: row("note", "patch", "bot"), Entity: rec(`{"status":"open","project":"p1","n":3}`)},
			"all broken:error not-owner notes"},
		{"task delete", Subject{Row: row("task", "delete", "owner"), Before: rec(`{"status":"done"}`)},
			"all owner-only tasks"},
		{"engine fire", Subject{Row: row("eddy.trigger", "fire", "engine")}, "fires"}, // not-owner names no engine op
		{"engine park", Subject{Row: row("eddy.delivery", "park", "engine")}, ""},
	}
	for _, tc := range tests {
		got := resultString(x.Match(tc.in))
		if got != tc.want {
			t.Errorf("%s: Match = %q, want %q", tc.name, got, tc.want)
		}
		if naive := resultString(x.matchNaive(tc.in)); naive != tc.want {
			t.Errorf("%s: matchNaive = %q, want %q", tc.name, naive, tc.want)
		}
	}
}

// resultString renders results in index order: "name" for a match,
// "name:error" for an error.
func resultString(rs []Result) string {
	var parts []string
	for _, r := range rs {
		switch r.Stance {
		case StanceMatched:
			parts = append(parts, r.Trigger)
		default:
			parts = append(parts, r.Trigger+":"+r.Stance.String())
		}
	}
	return strings.Join(parts, " ")
}

func TestIndexOrder(t *testing.T) {
	t.Parallel()
	x := NewIndex([]*Trigger{mustTrigger(t, "b", `{}`), mustTrigger(t, "c", `{"types": ["task"]}`), mustTrigger(t, "a", `{"when": "row.type == 'task'"}`)})
	got := resultString(x.Match(Subject{Row: &store.Row{Type: "task", Op: "put", Actor: "owner"}}))
	if got != "a b c" {
		t.Errorf("Match = %q, want name order", got)
	}
}

func TestIndexBadInput(t *testing.T) {
	t.Parallel()
	x := NewIndex([]*Trigger{mustTrigger(t, "plain", `{}`), mustTrigger(t, "when", `{"when": "entity.properties.a == 1"}`)})
	in := Subject{Row: &store.Row{Type: "task", Op: "put", Actor: "owner"},
		Entity: &store.Record{Properties: json.RawMessage(`{`)}}
	if got := resultString(x.Match(in)); got != "plain when:error" {
		t.Errorf("Match = %q, want plain matched and when errored", got)
	}
	if x.Match(Subject{}) != nil {
		t.Error("Match without a row answered")
	}
}

// TestIndexAgreesWithNaive is the property test: on random triggers and
// random rows, Match answers exactly what evaluating every trigger does.
func TestIndexAgreesWithNaive(t *testing.T) {
	t.Parallel()
	rounds, rows := 24, 125
	if testing.Short() {
		rounds = 6
	}
	var stats struct{ triggers, guarded, rows, matched, errors, costErrors, compileFailures int }
	for round := range rounds {
		rng := rand.New(rand.NewPCG(2026, uint64(round)))
		// One round in two runs with a tiny cost limit, so cost errors
		// interleave with the guards.
		limit := CostLimit
		if round%2 == 1 {
			limit = []uint64{15, 25, 40, 60}[round/2%4]
		}
		var ts []*Trigger
		for i := range 50 {
			tr, ok := randomTrigger(t, rng, fmt.Sprintf("t%02d", i), limit)
			if !ok {
				stats.compileFailures++
				continue
			}
			ts = append(ts, tr)
		}
		x := NewIndex(ts)
		stats.triggers += x.Len()
		stats.guarded += x.guarded
		for range rows {
			in := randomInput(rng)
			got, want := x.Match(in), x.matchNaive(in)
			if g, w := resultDetail(got), resultDetail(want); g != w {
				t.Fatalf("round %d: row %s entity %s before %s\nMatch:      %s\nmatchNaive: %s\ntriggers:\n%s",
					round, mustJSON(t, in.Row), recJSON(in.Entity), recJSON(in.Before), g, w, whens(ts))
			}
			stats.rows++
			for _, r := range want {
				switch {
				case r.Stance == StanceMatched:
					stats.matched++
				case strings.Contains(r.Err.Error(), "cost limit"):
					stats.costErrors++
				default:
					stats.errors++
				}
			}
		}
	}
	t.Logf("%+v", stats)
	if stats.guarded < stats.triggers/4 || stats.matched < stats.rows || stats.errors < stats.rows/10 || stats.costErrors < stats.rows/10 ||
		stats.compileFailures > stats.triggers/10 {
		t.Errorf("the generator does not exercise the index: %+v", stats)
	}
}

func resultDetail(rs []Result) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s:%s", r.Trigger, r.Stance)
		if r.Err != nil {
			fmt.Fprintf(&b, "(%v)", r.Err)
		}
		b.WriteString(" ")
	}
	return b.String()
}

func recJSON(r *store.Record) string {
	if r == nil {
		return "null"
	}
	return string(r.Properties)
}

func whens(ts []*Trigger) string {
	var b strings.Builder
	for _, t := range ts {
		c := t.Source.Changes
		fmt.Fprintf(&b, "  %s types=%v ops=%v actors=%v exclude=%v when: %s\n", t.Name, c.Types, c.Ops, c.Actors, c.ExcludeActors, c.When)
	}
	return b.String()
}

var (
	genTypes  = []string{"task", "note", "eddy.trigger"}
	genOps    = []string{"put", "patch", "delete", "link", "unlink", "merge", "split", "fire", "park"}
	genActors = []string{"owner", "bot", "engine", "trigger:t01"}
	genPaths  = []string{
		"entity.properties.p", "entity.properties.p", "entity.properties.q", `entity.properties["r-s"]`,
		"entity.properties.obj.k", "entity.properties.l", "before.properties.p", "before.properties.q",
		"entity.id", "entity.version", "entity", "before", "row.type", "row.op", "row.actor", "row.seq",
		"row.payload.created", "row.payload.x",
	}
	genLits = []string{`"a"`, `"b"`, `"c"`, `"1"`, `1`, `2`, `1.0`, `2.5`, `1u`, `-0.0`, `true`, `false`,
		`"task"`, `"put"`, `"owner"`, `7`}
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func subset(rng *rand.Rand, xs []string, p float64) []string {
	if rng.Float64() >= p {
		return nil
	}
	var out []string
	for _, x := range xs {
		if rng.IntN(3) == 0 {
			out = append(out, x)
		}
	}
	return out
}

func randomTrigger(t *testing.T, rng *rand.Rand, name string, limit uint64) (*Trigger, bool) {
	t.Helper()
	c := map[string]any{
		"types": subset(rng, genTypes[:2], 0.6), "ops": subset(rng, genOps, 0.4),
		"actors": subset(rng, genActors, 0.2), "excludeActors": subset(rng, genActors, 0.2),
	}
	if rng.IntN(10) > 0 {
		c["when"] = randomWhen(rng)
	}
	body, _ := json.Marshal(map[string]any{"source": map[string]any{"changes": c}, "function": "f"})
	tr, err := ParseTrigger(name, body)
	if err != nil {
		t.Logf("skip %s: %v", body, err)
		return nil, false
	}
	if w := tr.Source.Changes.When; w != "" && limit != CostLimit {
		if tr.Source.Changes.prg, err = compile("when", w, limit); err != nil {
			t.Fatal(err)
		}
	}
	return tr, true
}

// randomWhen builds a conjunction whose parts mix guards with everything
// a guard must not be confused with.
func randomWhen(rng *rand.Rand) string {
	n := 1 + rng.IntN(4)
	parts := make([]string, n)
	for i := range parts {
		if rng.IntN(2) == 0 {
			parts[i] = eqAtom(rng)
		} else {
			parts[i] = randomExpr(rng, 2)
		}
	}
	return strings.Join(parts, " && ")
}

func eqAtom(rng *rand.Rand) string {
	p, l := pick(rng, genPaths), pick(rng, genLits)
	if rng.IntN(4) == 0 {
		return l + " == " + p
	}
	return p + " == " + l
}

func randomExpr(rng *rand.Rand, depth int) string {
	if depth == 0 || rng.IntN(3) == 0 {
		return randomAtom(rng)
	}
	a, b := randomExpr(rng, depth-1), randomExpr(rng, depth-1)
	switch rng.IntN(5) {
	case 0:
		return "(" + a + " || " + b + ")"
	case 1:
		return "!(" + a + ")"
	case 2:
		return "(" + randomAtom(rng) + " ? " + a + " : " + b + ")"
	}
	return "(" + a + " && " + b + ")"
}

func randomAtom(rng *rand.Rand) string {
	p, l := pick(rng, genPaths), pick(rng, genLits)
	atoms := []string{
		p + " == " + l, p + " != " + l, p + " != null", "null != " + p, p + " == null",
		"entity == null", "entity != null", "before != null",
		"has(entity.properties.p)", "has(before.properties.q)", "has(entity.properties.obj.k)",
		p + " > 1", p + ` < "b"`, p + " >= 1.5",
		`string(` + p + `).startsWith("a")`, p + `.startsWith("a")`, `string(` + p + `).contains("b")`,
		"size(" + p + ") > 0", `string(` + p + `).matches("^[ab]")`,
		"int(" + p + ") > 0", "1 / int(" + p + ") == 1", "entity.properties.l[2] == 1", p,
		"entity.properties.l.x == 1", l + " in entity.properties.l", p + ` in ["a", 1, true]`,
		`entity.properties.l.exists(x, x == "a")`, "true", "false", `row.ts > timestamp("2026-01-01T00:00:00Z")`,
	}
	return pick(rng, atoms)
}

var genValues = []any{"a", "b", "c", "1", "task", "put", "owner", 1.0, 2.0, 2.5, 7.0, 0.0, true, false, nil,
	[]any{"a", 1.0}, []any{}, map[string]any{"k": "a"}, map[string]any{}}

func randomProps(rng *rand.Rand) json.RawMessage {
	props := map[string]any{}
	for _, k := range []string{"p", "p", "q", "r-s", "l", "obj", "s"} {
		if rng.IntN(4) > 0 {
			props[k] = pick(rng, genValues)
		}
	}
	if rng.IntN(2) == 0 {
		props["obj"] = map[string]any{"k": pick(rng, genValues)}
	}
	b, _ := json.Marshal(props)
	return b
}

func randomInput(rng *rand.Rand) Subject {
	r := &store.Row{Seq: 1 + rng.Int64N(10), TS: time.Date(2026, 8, 4, 0, 0, 0, 0, time.UTC),
		Type: pick(rng, genTypes), Op: pick(rng, genOps), Actor: pick(rng, genActors), EntityID: "e1",
		Payload: json.RawMessage(pick(rng, []string{`{"created":true}`, `{"x":"a"}`, `{}`, `{"x":1}`}))}
	in := Subject{Row: r}
	if rng.IntN(4) > 0 {
		in.Entity = &store.Record{Type: r.Type, ID: "e1", Version: rng.Int64N(10), Properties: randomProps(rng)}
		if rng.IntN(50) == 0 {
			in.Entity.Properties = json.RawMessage(`{"p":`) // a storage bug: ErrBadInput
		}
	}
	if rng.IntN(5) < 3 {
		in.Before = &store.Record{Type: r.Type, ID: "e1", Version: rng.Int64N(10), Properties: randomProps(rng)}
	}
	return in
}

// TestCostBoundIsSound checks costBound against cel-go's runtime cost
// tracker: a program the index calls bounded must never cost more.
func TestCostBoundIsSound(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	bounded := 0
	for range 600 {
		src := randomWhen(rng)
		a, iss := env.Compile(src)
		if iss != nil && iss.Err() != nil {
			t.Fatalf("%s: %v", src, iss.Err())
		}
		bound, ok := costBound(a.NativeRep().Expr())
		if !ok {
			continue
		}
		bounded++
		prg, err := env.Program(a, cel.EvalOptions(cel.OptTrackCost))
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			_, det, _ := prg.Eval(newVars(randomInput(rng)))
			if cost := *det.ActualCost(); cost > bound {
				t.Fatalf("%s: actual cost %d above bound %d", src, cost, bound)
			}
		}
	}
	if bounded < 120 {
		t.Errorf("only %d of 600 expressions bounded", bounded)
	}
}

// TestIndexTypes: Types names every type a trigger lists, sorted and once
// each, and answers all once one trigger lists none; a row of a type it
// does not name has no candidate (Match answers nothing for it).
func TestIndexTypes(t *testing.T) {
	t.Parallel()
	typed := []*Trigger{
		mustTrigger(t, "a", `{"types":["task","note"]}`),
		mustTrigger(t, "b", `{"types":["task"],"when":"entity.properties.n == 1"}`),
		mustTrigger(t, "c", `{"types":["user"],"ops":["delete"]}`),
	}
	x := NewIndex(typed)
	types, all := x.Types()
	if all || !slices.Equal(types, []string{"note", "task", "user"}) {
		t.Fatalf("Types() = %q, %v; want [note task user], false", types, all)
	}
	row := store.Row{Seq: 1, Op: "put", Type: "other", EntityID: "o"}
	if rs := x.Match(Subject{Row: &row}); len(rs) != 0 {
		t.Fatalf("a row of an unnamed type matched %s", resultString(rs))
	}
	if types, all := NewIndex(append(typed, mustTrigger(t, "d", `{"ops":["put"]}`))).Types(); !all {
		t.Fatalf("with a trigger naming no types: Types() = %q, false; want all", types)
	}
	if types, all := NewIndex(nil).Types(); all || len(types) != 0 {
		t.Fatalf("empty index: Types() = %q, %v", types, all)
	}
}
