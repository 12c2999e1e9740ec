package server

import (
	"net/http"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

func TestBacktestAPI(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		sp := "/api/v1/spaces/default"
		e.call(t, "PUT", sp+"/functions/f", map[string]any{"kind": "expr", "code": "nil"}).want(http.StatusCreated)
		e.call(t, "PUT", sp+"/triggers/done", map[string]any{
			"source":   map[string]any{"changes": map[string]any{"types": []string{"task"}, "when": "entity.properties.status == 'done'"}},
			"function": "f",
		}).want(http.StatusCreated)
		e.call(t, "PUT", sp+"/entities/task/a", map[string]any{"status": "done"}).want(http.StatusCreated)
		e.call(t, "PUT", sp+"/entities/task/b", map[string]any{"status": "todo"}).want(http.StatusCreated)
		e.call(t, "PUT", sp+"/entities/task/c", map[string]any{"status": "done"}).want(http.StatusCreated)
		head := e.head(t, "default")

		path := sp + "/triggers/done/backtest"
		var res struct {
			Trigger        string           `json:"trigger"`
			From           int64            `json:"from"`
			To             int64            `json:"to"`
			Scanned        int64            `json:"scanned"`
			Matched        int64            `json:"matched"`
			NotMatched     int64            `json:"notMatched"`
			Samples        []map[string]any `json:"samples"`
			ProjectedDepth int              `json:"projectedDepth"`
		}
		r := e.call(t, "POST", path, nil).want(http.StatusOK)
		if k := keys(r.obj()); !slices.Equal(k, []string{"coalesced", "echo", "errors", "from", "matched", "notMatched",
			"projectedDepth", "samples", "scanned", "to", "trigger", "truncated"}) {
			t.Errorf("keys = %v", k)
		}
		r.decode(&res)
		if res.Trigger != "done" || res.Matched != 2 || res.ProjectedDepth != 1 || len(res.Samples) != 2 || res.Samples[0]["stance"] != "matched" {
			t.Errorf("backtest = %+v", res)
		}
		// A changed definition under the same name, over a sub-range.
		e.call(t, "POST", path, map[string]any{"from": head - 2, "to": head - 1, "samples": 5, "trigger": map[string]any{
			"source": map[string]any{"changes": map[string]any{"when": "entity.properties.status == 'todo'"}}, "function": "f",
		}}).want(http.StatusOK).decode(&res)
		if res.Matched != 1 || res.Scanned != 1 || res.Samples[0]["entityId"] != "b" {
			t.Errorf("changed = %+v", res)
		}
		e.call(t, "POST", sp+"/triggers/new/backtest", map[string]any{"trigger": map[string]any{
			"source": map[string]any{"changes": map[string]any{}}, "function": "unsaved",
		}}).want(http.StatusOK)

		e.call(t, "POST", path, map[string]any{"to": head + 1}).problem(problem.BadRequest)
		e.call(t, "POST", path, map[string]any{"from": 2, "to": 1}).problem(problem.BadRequest)
		e.call(t, "POST", path, map[string]any{"bogus": 1}).problem(problem.BadRequest)
		e.call(t, "POST", path, map[string]any{"trigger": 1}).problem(problem.BadRequest)
		e.call(t, "POST", sp+"/triggers/missing/backtest", nil).problem(problem.NotFound)
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.do(t, req{Method: "POST", Path: path, Token: reader}).problem(problem.Forbidden)

		e.call(t, "POST", sp+"/prune", map[string]any{"through": 2}).want(http.StatusOK)
		e.call(t, "POST", path, map[string]any{"from": 1}).problem(problem.Compacted)
	})
}
