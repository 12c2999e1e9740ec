package views

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/store"
)

func mustView(tb testing.TB, name, def string) *Definition {
	tb.Helper()
	d, err := Parse(name, []byte(def))
	if err != nil {
		tb.Fatalf("view %s: %v", name, err)
	}
	return d
}

// TestIndexAgreesWithNaive is the property test of index.go: on random
// views and random changes, Judge answers exactly what judging every
// view does.
func TestIndexAgreesWithNaive(t *testing.T) {
	t.Parallel()
	rounds, changes := 8, 200
	if testing.Short() {
		rounds = 3
	}
	var stats struct{ views, guarded, changes, judged, held int }
	for round := range rounds {
		rng := rand.New(rand.NewPCG(11, uint64(round)))
		var defs []*Definition
		for i := range 40 {
			defs = append(defs, randomView(t, rng, fmt.Sprintf("v%02d", i)))
		}
		x := NewIndex(defs)
		stats.views += x.Len()
		for _, d := range defs {
			if _, _, ok := d.guard(); ok {
				stats.guarded++
			}
		}
		for range changes {
			ch := randomChange(rng)
			got, want := x.Judge(ch), x.judgeNaive(ch)
			if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
				t.Fatalf("round %d: change %s\nbefore %s\nafter  %s\nJudge:      %s\njudgeNaive: %s\nviews:\n%s",
					round, ch.Type, recJSON(ch.Before), recJSON(ch.After), g, w, specs(defs))
			}
			stats.changes++
			stats.judged += len(want)
			for _, j := range want {
				if j.Before || j.After {
					stats.held++
				}
			}
		}
	}
	t.Logf("%+v", stats)
	if stats.guarded < stats.views/2 || stats.held < stats.changes/2 {
		t.Errorf("the generator does not exercise the index: %+v", stats)
	}
}

func recJSON(r *store.Record) string {
	if r == nil {
		return "null"
	}
	return string(r.Properties)
}

func specs(defs []*Definition) string {
	var b strings.Builder
	for _, d := range defs {
		s, _ := json.Marshal(d.Spec())
		fmt.Fprintf(&b, "  %s %s\n", d.Name(), s)
	}
	return b.String()
}

var (
	genTypes = []string{"task", "note"}
	genProps = []string{"p", "q", "r-s"}
	genLits  = []string{`"a"`, `"b"`, `"1"`, `1`, `2`, `1.0`, `2.5`, `1u`, `-0.0`, `0`, `true`, `false`}
	genVals  = []any{"a", "b", "1", 1.0, 2.0, 2.5, 0.0, true, false, nil, []any{"a"}, map[string]any{"k": "a"}}
)

func pick[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

func randomView(t *testing.T, rng *rand.Rand, name string) *Definition {
	t.Helper()
	types := []string{pick(rng, genTypes)}
	if rng.IntN(4) == 0 {
		types = genTypes
	}
	var filter any
	switch rng.IntN(5) {
	case 0, 1:
		v := pick(rng, genVals[:9])
		filter = map[string]any{"fieldEquals": map[string]any{"field": pick(rng, genProps), "expected": v}}
	case 2, 3:
		filter = map[string]any{"cel": randomCEL(rng)}
	default:
		filter = map[string]any{"currentState": map[string]any{"cel": randomCEL(rng)}}
	}
	body, _ := json.Marshal(map[string]any{"version": "v1", "types": types, "filter": filter})
	return mustView(t, name, string(body))
}

// randomCEL mixes property equalities with conjuncts that are not.
func randomCEL(rng *rand.Rand) string {
	n := 1 + rng.IntN(3)
	parts := make([]string, n)
	for i := range parts {
		p := pick(rng, genProps)
		path := "entity.properties." + p
		if p == "r-s" || rng.IntN(4) == 0 {
			path = `entity.properties["` + p + `"]`
		}
		lit := pick(rng, genLits)
		switch rng.IntN(7) {
		case 0, 1, 2:
			parts[i] = path + " == " + lit
		case 3:
			parts[i] = lit + " == " + path
		case 4:
			parts[i] = "(" + path + " == " + lit + " || " + path + " == " + pick(rng, genLits) + ")"
		case 5:
			parts[i] = path + " != " + lit
		default:
			parts[i] = pick(rng, []string{"true", "entity.id != \"\"", "has(entity.properties.q)", "int(" + path + ") > 0", `size(entity.links) == 0`})
		}
	}
	return strings.Join(parts, " && ")
}

func randomProps(rng *rand.Rand) json.RawMessage {
	if rng.IntN(60) == 0 {
		return json.RawMessage(`{"p":`) // a storage bug: holds nothing
	}
	props := map[string]any{}
	for _, k := range genProps {
		if rng.IntN(4) > 0 {
			props[k] = pick(rng, genVals)
		}
	}
	b, _ := json.Marshal(props)
	return b
}

func randomChange(rng *rand.Rand) *store.Change {
	typ := pick(rng, genTypes)
	rec := func() *store.Record {
		return &store.Record{Type: typ, ID: "e1", Version: 3, Kind: store.KindLive, Properties: randomProps(rng)}
	}
	ch := &store.Change{Type: typ, ID: "e1", Version: 4}
	switch rng.IntN(4) {
	case 0:
		ch.Kind, ch.After = store.ChangeCreated, rec()
	case 1:
		ch.Kind, ch.Before = store.ChangeDeleted, rec()
	default:
		ch.Kind, ch.Before, ch.After = store.ChangeUpdated, rec(), rec()
	}
	return ch
}
