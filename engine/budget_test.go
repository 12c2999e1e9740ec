package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
)

// budgetParks returns the park rows after seq that name the causal
// budget.
func budgetParks(e *env, after int64) []store.Commit {
	e.t.Helper()
	var out []store.Commit
	for _, c := range e.commits(after) {
		if c.Op != changelog.OpPark {
			continue
		}
		var p struct {
			Limit string `json:"limit"`
		}
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			e.t.Fatal(err)
		}
		if p.Limit == causality.LimitBudget {
			out = append(out, c)
		}
	}
	return out
}

// A function that writes three rows per run fans out from one root
// write until the root has caused its budget: later deliveries park,
// with exactly one park row naming the budget. Releasing a parked
// delivery runs it; the deliveries its rows cause park quietly.
func TestBudgetParksFanOut(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.handler("fan", func(_ context.Context, in functions.Input) ([]changelog.Mutation, error) {
			var ms []changelog.Mutation
			for i := range 3 {
				ms = append(ms, put("a", fmt.Sprintf("%s-%d", in.Row.EntityID, i), map[string]any{"n": i}))
			}
			return ms, nil
		}, "a")
		const budget = 10
		e.trigger("fan", fmt.Sprintf(`{"source":{"changes":{"types":["a"]}},"function":"fan","echo":true,"causalBudget":%d}`, budget))
		root := e.write(put("a", "x", map[string]any{"n": 0}))
		head := e.settle()

		// Rows of deliveries already running land: the root's first
		// delivery and its three run (12 rows) and at most the three
		// writes judged below the budget spawn three runs each (30).
		rows := e.commits(root)
		caused := 0
		for _, c := range rows {
			if c.Op == changelog.OpPark {
				continue
			}
			caused++
			if c.Provenance.Root != root {
				t.Fatalf("row %d: root %d, want %d", c.Seq, c.Provenance.Root, root)
			}
		}
		if caused < 12 || caused > 30 || caused%3 != 0 {
			t.Fatalf("the root caused %d rows, want 12..30 under budget %d", caused, budget)
		}
		parks := budgetParks(e, root)
		if len(parks) != 1 || len(rows)-caused != 1 {
			t.Fatalf("%d budget park rows among %d park rows, want exactly 1", len(parks), len(rows)-caused)
		}
		var payload map[string]any
		if err := json.Unmarshal(parks[0].Payload, &payload); err != nil {
			t.Fatal(err)
		}
		if payload["trigger"] != "fan" || payload["budget"] != float64(budget) || payload["rows"].(float64) < budget {
			t.Fatalf("park payload %s", parks[0].Payload)
		}
		if parks[0].Provenance.Root != root {
			t.Fatalf("park row provenance %+v, want root %d", parks[0].Provenance, root)
		}
		parked := e.deliveries("fan", store.DeliveryParked)
		if len(parked) == 0 || len(parked)+(caused/3)-1 != caused {
			// Every row caused a delivery: caused/3-1 of them ran (the
			// root's own delivery ran too), the rest are parked.
			t.Fatalf("%d parked deliveries for %d rows caused", len(parked), caused)
		}
		parkedBy := false
		for _, d := range parked {
			if !strings.Contains(d.LastError, fmt.Sprintf("the causal budget is %d", budget)) {
				t.Fatalf("parked delivery %+v: lastError does not name the budget", d)
			}
			parkedBy = parkedBy || d.ID == parks[0].EntityID
		}
		if !parkedBy {
			t.Fatalf("the park row names %s, not a parked delivery", parks[0].EntityID)
		}

		released, err := e.eng.Release(t.Context(), space, parked[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		end := e.settle()
		if end != head+3 {
			t.Fatalf("head %d after the release, want %d: %+v", end, head+3, e.commits(head))
		}
		if got := e.delivery("fan", released.Seq); got.Status != store.DeliverySucceeded || got.Attempts != 1 {
			t.Fatalf("released delivery %+v", got)
		}
		if n := len(budgetParks(e, root)); n != 1 {
			t.Fatalf("%d budget park rows after the release, want 1", n)
		}
		if n := len(e.deliveries("fan", store.DeliveryParked)); n != len(parked)-1+3 {
			t.Fatalf("%d parked deliveries after the release, want %d", n, len(parked)+2)
		}
	})
}

// A second root write gets a budget of its own.
func TestBudgetIsPerRoot(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		opts := testOptions()
		opts.SpaceBudget = 2
		e := newEnv(t, open(t), opts)
		e.function("to-b", `{"kind":"expr","writes":["b"],"code":"put(\"b\", entity.id, {\"n\": entity.properties.n + 1})"}`)
		e.function("to-c", `{"kind":"expr","writes":["c"],"code":"put(\"c\", entity.id, {\"n\": entity.properties.n + 1})"}`)
		e.function("to-d", `{"kind":"expr","writes":["d"],"code":"put(\"d\", entity.id, {\"n\": entity.properties.n + 1})"}`)
		e.trigger("ab", `{"source":{"changes":{"types":["a"]}},"function":"to-b"}`)
		e.trigger("bc", `{"source":{"changes":{"types":["b"]}},"function":"to-c"}`)
		e.trigger("cd", `{"source":{"changes":{"types":["c"]}},"function":"to-d"}`)
		for _, id := range []string{"x", "y"} {
			root := e.write(put("a", id, map[string]any{"n": 0}))
			e.settle()
			if n := e.get("c", id)["n"]; n != float64(2) {
				t.Fatalf("c/%s has n %v, want 2", id, n)
			}
			d := e.delivery("cd", root+2)
			if d.Status != store.DeliveryParked || !strings.Contains(d.LastError, fmt.Sprintf("root %d caused 2 rows", root)) {
				t.Fatalf("delivery of c/%s: %+v", id, d)
			}
		}
		if n := len(budgetParks(e, 0)); n != 2 {
			t.Fatalf("%d budget park rows, want one per root", n)
		}
	})
}
