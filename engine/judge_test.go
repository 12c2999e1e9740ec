package engine_test

import (
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/definitions"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/triggers"
)

// The one judge: the evaluator (through the deliveries and errors it
// recorded, read back by the stances answer), backtests and dry runs give
// every row the same stance, on rows that exercise each step of the
// judge's order: prefilter, echo (also on a row `when` would reject),
// `when` (matched, not_matched, error) and coalescing.
func TestOneJudgeAgreement(t *testing.T) {
	t.Parallel()
	e := newEnv(t, openSQLite(t), engine.Options{})
	e.noop()
	e.function("stamp", `{"kind":"expr","writes":["log"],"code":"put(\"log\", entity.id, {\"seen\": true})"}`)
	// Rows first, then the triggers from the beginning: each catches up
	// alone in one batch, as a backtest pages.
	e.write(put("task", "t1", map[string]any{"status": "open", "title": "x"}))
	e.write(patch("task", "t1", map[string]any{"status": "done"}))
	e.write(put("task", "t2", map[string]any{"status": "done", "title": "12"}))
	e.write(patch("task", "t1", map[string]any{"title": "y"}))
	e.writeAs("trigger:plain", put("note", "n1", map[string]any{"status": "done"}))
	e.writeAs("trigger:plain", put("task", "t3", map[string]any{"status": "open"}))
	e.write(changelogDelete("task", "t2"))
	defs := map[string]string{
		"plain":   `{"source":{"changes":{"types":["task"],"when":"entity != null && entity.properties.status == 'done'"}},"function":"noop","start":"beginning"}`,
		"stamp":   `{"source":{"changes":{"types":["task","log"],"when":"entity != null && entity.properties.status == 'done'"}},"function":"stamp","start":"beginning"}`,
		"erring":  `{"source":{"changes":{"types":["task"],"when":"entity != null && int(entity.properties.title) > 0"}},"function":"noop","start":"beginning"}`,
		"coal":    `{"source":{"changes":{"types":["task"]}},"function":"noop","coalesce":true,"start":"beginning"}`,
		"deletes": `{"source":{"changes":{"ops":["delete"]}},"function":"noop","start":"beginning"}`,
	}
	for _, name := range []string{"plain", "stamp", "erring", "coal", "deletes"} {
		e.trigger(name, defs[name])
		e.settle(name)
	}
	head := e.settle()
	for name := range defs {
		whole := backtest(e, name, 0, head)
		var coalesced int64
		for seq := int64(1); seq <= head; seq++ {
			got := e.stances(seq)[name]
			live := got.Stance.String()
			if live == "coalesced" {
				live, coalesced = "matched", coalesced+1
			}
			if bt := rowStance(backtest(e, name, seq-1, seq)); bt != live {
				t.Errorf("%s on row %d: stances %q, backtest %q", name, seq, got.Stance, bt)
			}
			res, err := e.defs.TestFunction(t.Context(), space, "noop", definitions.TestParams{Seq: seq, Trigger: name})
			if err != nil {
				t.Fatal(err)
			}
			if dry := res.Stance.String(); dry != live {
				t.Errorf("%s on row %d: stances %q, dry run %q", name, seq, got.Stance, dry)
			}
			if got.Stance == triggers.StanceError && (got.Error == "" || got.Error != res.StanceError) {
				t.Errorf("%s on row %d: error %q, dry run %q", name, seq, got.Error, res.StanceError)
			}
		}
		if whole.Coalesced != coalesced {
			t.Errorf("%s: %d coalesced by the evaluator, %d by the backtest", name, coalesced, whole.Coalesced)
		}
	}
	// The steps of the order, seen through the stances.
	for seq, want := range map[int64]map[string]string{
		2: {"plain": "matched", "erring": "error", "coal": "coalesced", "deletes": "not_matched"},
		5: {"plain": "not_matched", "stamp": "not_matched"}, // authored by plain, but no task: prefilter first
		6: {"plain": "echo", "coal": "matched"},             // echo before `when` (status open)
		7: {"deletes": "matched", "plain": "not_matched"},
	} {
		got := e.stances(seq)
		for name, stance := range want {
			if got[name].Stance.String() != stance {
				t.Errorf("%s on row %d: %q, want %q", name, seq, got[name].Stance, stance)
			}
		}
	}
	if s := e.stances(head)["stamp"].Stance; s != triggers.StanceEcho {
		t.Errorf("stamp on its own log row %d: %q, want echo", head, s)
	}
}

// backtest backtests a saved trigger over (from, to].
func backtest(e *env, name string, from, to int64) definitions.BacktestResult {
	e.t.Helper()
	res, err := e.defs.Backtest(e.t.Context(), space, definitions.BacktestParams{Name: name, From: from, To: to})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// rowStance is the stance a one-row backtest found.
func rowStance(r definitions.BacktestResult) string {
	switch {
	case r.Matched == 1:
		return "matched"
	case r.Echo == 1:
		return "echo"
	case r.Errors == 1:
		return "error"
	}
	return "not_matched"
}

func changelogDelete(typ, id string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpDelete, Type: typ, EntityID: id}
}
