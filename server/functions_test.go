package server

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

const testSecret = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="

func TestFunctionsAPI(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		path := "/api/v1/spaces/default/functions/notify"
		hook := map[string]any{"kind": "webhook", "url": "http://127.0.0.1:9000/hook", "secret": testSecret, "writes": []string{"task"}}

		r := e.call(t, "PUT", path, hook).want(http.StatusCreated)
		got := r.obj()
		if k := keys(got); !slices.Equal(k, []string{"kind", "name", "timeout", "url", "writes"}) || got["timeout"] != "10s" {
			t.Errorf("put function = %v (the secret must not be shown)", got)
		}
		if r.seq() != 0 {
			t.Errorf("Eddy-Seq = %d", r.seq())
		}
		e.call(t, "PUT", path, hook).want(http.StatusOK)
		if got := e.call(t, "GET", path, nil).want(http.StatusOK).obj(); got["secret"] != nil || got["name"] != "notify" {
			t.Errorf("get function = %v", got)
		}

		e.call(t, "PUT", "/api/v1/spaces/default/functions/stamp", map[string]any{
			"kind": "expr", "writes": []string{"task"}, "code": `patch("task", entity.id, {"completedAt": now})`,
		}).want(http.StatusCreated)
		var list struct {
			Functions []map[string]any `json:"functions"`
		}
		e.call(t, "GET", "/api/v1/spaces/default/functions", nil).want(http.StatusOK).decode(&list)
		if len(list.Functions) != 2 || list.Functions[0]["name"] != "notify" || list.Functions[0]["secret"] != nil || list.Functions[1]["code"] == nil {
			t.Errorf("functions = %v", list.Functions)
		}

		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.do(t, req{Method: "GET", Path: path, Token: reader}).want(http.StatusOK)
		e.do(t, req{Method: "GET", Path: "/api/v1/spaces/default/functions", Token: reader}).want(http.StatusOK)
		writer := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter})
		e.do(t, req{Method: "PUT", Path: path, Token: writer, Body: hook}).problem(problem.Forbidden)
		e.do(t, req{Method: "DELETE", Path: path, Token: writer}).problem(problem.Forbidden)
		e.do(t, req{Method: "POST", Path: path + "/test", Token: writer, Body: map[string]any{"seq": 1}}).problem(problem.Forbidden)

		r = e.call(t, "DELETE", path, nil)
		if r.status != http.StatusNoContent || len(r.body) != 0 || r.header.Get("Eddy-Seq") == "" {
			t.Errorf("delete = %d %s", r.status, r.body)
		}
		e.call(t, "GET", path, nil).problem(problem.NotFound)
		e.call(t, "DELETE", path, nil).problem(problem.NotFound)
	})
}

func TestFunctionErrors(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		base := "/api/v1/spaces/default/functions/"
		tests := []struct {
			name, method, path string
			body               any
			code, field        string
		}{
			{"code does not compile", "PUT", "f", map[string]any{"kind": "expr", "code": "put(\"task\",\n  nope, {})"}, problem.BadRequest, "code"},
			{"unknown kind", "PUT", "f", map[string]any{"kind": "lambda"}, problem.BadRequest, "kind"},
			{"unknown field", "PUT", "f", map[string]any{"kind": "go", "handler": "h", "extra": 1}, problem.BadRequest, "extra"},
			{"bad url", "PUT", "f", map[string]any{"kind": "webhook", "url": "ftp://x"}, problem.BadRequest, "url"},
			{"bad name", "PUT", "Bad_Name", map[string]any{"kind": "go", "handler": "h"}, problem.BadRequest, "name"},
			{"not an object", "PUT", "f", "[]", problem.BadRequest, ""},
			{"bad name get", "GET", "Bad_Name", nil, problem.BadRequest, ""},
			{"unknown param", "GET", "f?x=1", nil, problem.BadRequest, ""},
			{"missing space", "PUT", "../../nowhere/functions/f", map[string]any{"kind": "go", "handler": "h"}, problem.NotFound, ""},
		}
		for _, tt := range tests {
			pe := e.call(t, tt.method, base+tt.path, tt.body).problem(tt.code)
			if tt.field != "" && pe.Details["field"] != tt.field {
				t.Errorf("%s: details = %v, want field %q", tt.name, pe.Details, tt.field)
			}
		}
		pe := e.call(t, "PUT", base+"f", map[string]any{"kind": "expr", "code": "put(\"task\",\n  nope, {})"}).problem(problem.BadRequest)
		if pos, _ := pe.Details["position"].(map[string]any); pos["line"] != float64(2) || pos["column"] == nil {
			t.Errorf("position = %v", pe.Details["position"])
		}
	})
}

func TestFunctionTest(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		ents := "/api/v1/spaces/default/entities/task/t1"
		e.call(t, "PUT", ents, map[string]any{"status": "todo"}).want(http.StatusCreated)
		seq := e.do(t, req{Method: "PATCH", Path: ents, Token: e.admin, Body: `{"status": "done"}`,
			Header: map[string]string{"Content-Type": "application/merge-patch+json"}}).want(http.StatusOK).seq()
		fpath := "/api/v1/spaces/default/functions/stamp"
		e.call(t, "PUT", fpath, map[string]any{"kind": "expr", "writes": []string{"task"},
			"code": `before.properties.status != "done" ? patch("task", entity.id, {"completedAt": now, "trigger": trigger}) : nil`,
		}).want(http.StatusCreated)

		head := e.head(t, "default")
		var res struct {
			Function string           `json:"function"`
			Seq      int64            `json:"seq"`
			Actions  []map[string]any `json:"actions"`
		}
		e.call(t, "POST", fpath+"/test", map[string]any{"seq": seq, "trigger": "done"}).want(http.StatusOK).decode(&res)
		if res.Function != "stamp" || res.Seq != seq || len(res.Actions) != 1 {
			t.Fatalf("test = %+v", res)
		}
		a := res.Actions[0]
		patch, _ := a["patch"].(map[string]any)
		if a["op"] != "patch" || a["type"] != "task" || a["entityId"] != "t1" || patch["trigger"] != "done" || patch["completedAt"] == nil {
			t.Errorf("action = %v", a)
		}
		if e.head(t, "default") != head {
			t.Error("a dry run wrote to the log")
		}

		// seq 1 creates t1: before is null, so the program fails at a position.
		pe := e.call(t, "POST", fpath+"/test", map[string]any{"seq": 1}).problem(problem.Unprocessable)
		if pe.Details["position"] == nil {
			t.Errorf("details = %v", pe.Details)
		}
		pe = e.call(t, "POST", fpath+"/test", map[string]any{"seq": head + 1}).problem(problem.BadRequest)
		if pe.Details["field"] != "seq" {
			t.Errorf("details = %v", pe.Details)
		}
		e.call(t, "POST", fpath+"/test", map[string]any{}).problem(problem.BadRequest)
		e.call(t, "POST", fpath+"/test", map[string]any{"seq": 1, "other": true}).problem(problem.BadRequest)
		e.call(t, "POST", "/api/v1/spaces/default/functions/none/test", map[string]any{"seq": 1}).problem(problem.NotFound)

		hook := "/api/v1/spaces/default/functions/hook"
		e.call(t, "PUT", hook, map[string]any{"kind": "webhook", "url": "http://127.0.0.1:9000/hook", "secret": testSecret}).want(http.StatusCreated)
		var wres struct {
			Request struct {
				Method  string            `json:"method"`
				URL     string            `json:"url"`
				Headers map[string]string `json:"headers"`
				Body    map[string]any    `json:"body"`
			} `json:"request"`
		}
		e.call(t, "POST", hook+"/test", map[string]any{"seq": seq}).want(http.StatusOK).decode(&wres)
		rq := wres.Request
		if rq.Method != http.MethodPost || rq.URL != "http://127.0.0.1:9000/hook" || rq.Headers["webhook-id"] == "" ||
			rq.Headers["webhook-timestamp"] == "" || strings.Contains(rq.Headers["webhook-signature"], "=") {
			t.Errorf("request = %+v", rq)
		}
		if keys(rq.Body)[0] != "before" || rq.Body["entity"] == nil || rq.Body["before"] == nil {
			t.Errorf("body = %v", rq.Body)
		}

		e.call(t, "PUT", "/api/v1/spaces/default/functions/native", map[string]any{"kind": "go", "handler": "sync"}).want(http.StatusCreated)
		e.call(t, "POST", "/api/v1/spaces/default/functions/native/test", map[string]any{"seq": 1}).problem(problem.Unprocessable)

		e.call(t, "POST", "/api/v1/spaces/default/prune", map[string]any{"through": 1}).want(http.StatusOK)
		pe = e.call(t, "POST", fpath+"/test", map[string]any{"seq": 1}).problem(problem.Compacted)
		if pe.Details["horizon"] != float64(1) {
			t.Errorf("details = %v", pe.Details)
		}
	})
}
