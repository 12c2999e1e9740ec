package definitions

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// writeAs applies mutations to space s under a provenance.
func (f *fixture) writeAs(prov store.Provenance, ms ...changelog.Mutation) int64 {
	f.t.Helper()
	res, err := f.log.Write(context.Background(), changelog.WriteRequest{Space: "s", Mutations: ms, Provenance: prov})
	if err != nil {
		f.t.Fatal(err)
	}
	return res.LastSeq
}

func putTask(id, props string) changelog.Mutation {
	return changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: id, Properties: json.RawMessage(props)}
}

func TestBacktest(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(f *fixture) {
		t := f.t
		ctx := context.Background()
		f.putFunction("notify", `{"kind": "expr", "code": "nil"}`)
		f.putTrigger("done", `{"source": {"changes": {"types": ["task"],
			"when": "entity.properties.status == 'done' && int(entity.properties.n) / int(entity.properties.d) > 0"}},
			"function": "notify", "coalesce": true}`)
		// 1: matched; 2: not matched; 3: error (division by zero);
		// 4: other type (not matched); 5: echo; 6: matched at depth 2;
		// 7: matched (coalesced with 6 on the same entity).
		f.write(putTask("a", `{"status": "done", "n": 1, "d": 1}`))
		f.write(putTask("b", `{"status": "todo", "n": 1, "d": 1}`))
		f.write(putTask("c", `{"status": "done", "n": 1, "d": 0}`))
		f.write(changelog.Mutation{Op: changelog.OpPut, Type: "note", EntityID: "n", Properties: json.RawMessage(`{"status": "done"}`)})
		f.writeAs(store.Provenance{Actor: "trigger:done", Via: "trigger", Trigger: "done", CausedBy: 1, Depth: 1},
			putTask("d", `{"status": "done", "n": 1, "d": 1}`))
		f.writeAs(store.Provenance{Actor: "trigger:other", Via: "trigger", Trigger: "other", CausedBy: 1, Depth: 2},
			putTask("e", `{"status": "done", "n": 1, "d": 1}`))
		head := f.write(putTask("e", `{"status": "done", "n": 2, "d": 1}`))

		res, err := f.svc.Backtest(ctx, "s", BacktestParams{Name: "done"})
		if err != nil {
			t.Fatal(err)
		}
		want := BacktestResult{Trigger: "done", From: 0, To: head, Scanned: 7, Matched: 3, NotMatched: 2,
			Echo: 1, Errors: 1, Coalesced: 1, ProjectedDepth: 3}
		got := res
		got.Samples = nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("result = %+v, want %+v", got, want)
		}
		var seqs []int64
		for _, s := range res.Samples {
			seqs = append(seqs, s.Seq)
			if s.Stance == triggers.StanceError && s.Error == "" {
				t.Errorf("error sample without error: %+v", s)
			}
		}
		if len(seqs) != 4 || seqs[0] != 1 || seqs[1] != 3 || seqs[2] != 6 || seqs[3] != 7 {
			t.Errorf("sample seqs = %v, want [1 3 6 7]", seqs)
		}

		// A changed definition, unsaved: echo on, one sample, a sub-range.
		res, err = f.svc.Backtest(ctx, "s", BacktestParams{Name: "done", From: 2, To: 6, Samples: 1,
			Trigger: json.RawMessage(`{"source": {"changes": {"types": ["task"], "when": "entity.properties.status == 'done'"}},
				"function": "notify", "echo": true}`)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Scanned != 4 || res.Matched != 3 || res.Echo != 0 || res.Coalesced != 0 || len(res.Samples) != 1 || res.Samples[0].Seq != 3 || res.To != 6 {
			t.Fatalf("changed = %+v", res)
		}
		// MaxRows truncates.
		res, err = f.svc.Backtest(ctx, "s", BacktestParams{Name: "done", MaxRows: 2})
		if err != nil || !res.Truncated || res.Scanned != 2 || res.To != 2 {
			t.Fatalf("truncated = %+v, %v", res, err)
		}
		// An unsaved trigger without a name; a bad one.
		res, err = f.svc.Backtest(ctx, "s", BacktestParams{Trigger: json.RawMessage(`{"source": {"changes": {}}, "function": "x"}`)})
		if err != nil || res.Trigger != "backtest" || res.Matched != 7 || res.ProjectedDepth != 3 {
			t.Fatalf("unnamed = %+v, %v", res, err)
		}
		_, err = f.svc.Backtest(ctx, "s", BacktestParams{Trigger: json.RawMessage(`{"source": {"changes": {"when": "1 +"}}, "function": "x"}`)})
		wantProblem(t, err, problem.BadRequest, "source.changes.when")

		f.putTrigger("tick", `{"source": {"cron": {"schedule": "@every 1m"}}, "function": "notify"}`)
		for _, c := range []struct {
			p     BacktestParams
			code  string
			field string
		}{
			{BacktestParams{Name: "tick"}, problem.BadRequest, ""},
			{BacktestParams{Name: "missing"}, problem.NotFound, ""},
			{BacktestParams{}, problem.BadRequest, ""},
			{BacktestParams{Name: "done", To: head + 1}, problem.BadRequest, "to"},
			{BacktestParams{Name: "done", From: 5, To: 4}, problem.BadRequest, "from"},
			{BacktestParams{Name: "done", From: -1}, problem.BadRequest, "from"},
			{BacktestParams{Name: "done", Samples: 101}, problem.BadRequest, "samples"},
			{BacktestParams{Name: "done", MaxRows: -1}, problem.BadRequest, "maxRows"},
		} {
			_, err := f.svc.Backtest(ctx, "s", c.p)
			wantProblem(t, err, c.code, c.field)
		}

		if _, err := f.log.Prune(ctx, "s", 3); err != nil {
			t.Fatal(err)
		}
		_, err = f.svc.Backtest(ctx, "s", BacktestParams{Name: "done", From: 2})
		var hu *changelog.HistoryUnavailableError
		if !errors.As(err, &hu) || hu.Horizon != 3 {
			t.Fatalf("compacted: err = %v", err)
		}
		res, err = f.svc.Backtest(ctx, "s", BacktestParams{Name: "done", From: 3})
		if err != nil || res.Scanned != 4 {
			t.Fatalf("above horizon = %+v, %v", res, err)
		}
	})
}
