package server

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

func TestRunAPI(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		sp := "/api/v1/spaces/default"
		e.call(t, "PUT", sp+"/functions/mark", map[string]any{"kind": "expr", "writes": []string{"task"},
			"code": "patch('task', entity.id, {'marked': true})"}).want(http.StatusCreated)
		e.call(t, "PUT", sp+"/functions/quiet", map[string]any{"kind": "expr", "code": "nil"}).want(http.StatusCreated)
		e.call(t, "PUT", sp+"/triggers/mark", map[string]any{
			"source": map[string]any{"changes": map[string]any{"types": []string{"task"}}}, "function": "mark",
		}).want(http.StatusCreated)
		e.call(t, "PUT", sp+"/triggers/quiet", map[string]any{
			"source": map[string]any{"changes": map[string]any{}}, "function": "quiet",
		}).want(http.StatusCreated)
		cause := e.call(t, "PUT", sp+"/entities/task/a", map[string]any{"status": "done"}).want(http.StatusCreated).seq()

		path := sp + "/triggers/mark/run"
		body := map[string]any{"entity": map[string]any{"type": "task", "id": "a"}}
		r := e.call(t, "POST", path, body).want(http.StatusOK)
		if k := keys(r.obj()); !slices.Equal(k, []string{"delivery", "depth", "receipts", "seq", "trigger"}) {
			t.Errorf("keys = %v", k)
		}
		var res struct {
			Trigger  string           `json:"trigger"`
			Delivery string           `json:"delivery"`
			Seq      int64            `json:"seq"`
			Depth    int              `json:"depth"`
			Receipts []map[string]any `json:"receipts"`
		}
		r.decode(&res)
		if res.Trigger != "mark" || !strings.HasPrefix(res.Delivery, "run_") || res.Seq != cause || res.Depth != 1 ||
			len(res.Receipts) != 1 || res.Receipts[0]["status"] != "applied" || r.seq() != cause+1 {
			t.Errorf("run = %+v, Eddy-Seq %d", res, r.seq())
		}
		r = e.call(t, "POST", sp+"/triggers/quiet/run", body).want(http.StatusOK)
		r.decode(&res)
		if len(res.Receipts) != 0 || res.Seq != cause+1 || res.Depth != 2 || r.seq() != cause+1 {
			t.Errorf("quiet run = %+v, Eddy-Seq %d", res, r.seq())
		}

		e.call(t, "POST", path, nil).problem(problem.BadRequest)
		e.call(t, "POST", path, map[string]any{"entity": map[string]any{"type": "task", "id": "zz"}}).problem(problem.NotFound)
		e.call(t, "POST", sp+"/triggers/missing/run", body).problem(problem.NotFound)
		e.call(t, "POST", path, map[string]any{"entity": body["entity"], "bogus": 1}).problem(problem.BadRequest)
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.do(t, req{Method: "POST", Path: path, Token: reader, Body: body}).problem(problem.Forbidden)

		e.call(t, "PUT", sp+"/entities/task/b", map[string]any{"status": "x"}).want(http.StatusCreated)
		e.call(t, "PUT", sp+"/entities/task/c", map[string]any{"status": "x"}).want(http.StatusCreated)
		e.call(t, "POST", sp+"/prune", map[string]any{"through": e.head(t, "default") - 1}).want(http.StatusOK)
		e.call(t, "POST", path, body).problem(problem.Compacted)
	})
}
