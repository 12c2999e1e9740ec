package server

import (
	"net/http"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

func TestTypes(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		path := "/api/v1/spaces/default/types/task"
		def := map[string]any{"properties": map[string]any{"title": map[string]any{"kind": "string"}}}

		r := e.call(t, "PUT", path, def).want(http.StatusCreated)
		got := r.obj()
		if k := keys(got); !slices.Equal(k, []string{"definition", "type", "updatedAt"}) || got["type"] != "task" {
			t.Errorf("put type = %v", got)
		}
		if r.seq() != 0 {
			t.Errorf("Eddy-Seq = %d", r.seq())
		}
		e.call(t, "PUT", path, def).want(http.StatusOK)
		e.call(t, "GET", path, nil).want(http.StatusOK)

		e.call(t, "PUT", "/api/v1/spaces/default/types/note", map[string]any{}).want(http.StatusCreated)
		var list struct {
			Types []map[string]any `json:"types"`
		}
		e.call(t, "GET", "/api/v1/spaces/default/types", nil).want(http.StatusOK).decode(&list)
		if len(list.Types) != 2 {
			t.Errorf("types = %v", list.Types)
		}

		limited := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Types: []string{"note"}})
		e.do(t, req{Method: "GET", Path: "/api/v1/spaces/default/types", Token: limited}).want(http.StatusOK).decode(&list)
		if len(list.Types) != 1 || list.Types[0]["type"] != "note" {
			t.Errorf("limited types = %v", list.Types)
		}
		e.do(t, req{Method: "GET", Path: path, Token: limited}).problem(problem.Forbidden)
		e.do(t, req{Method: "PUT", Path: "/api/v1/spaces/default/types/note", Token: limited, Body: map[string]any{}}).problem(problem.Forbidden)
		e.do(t, req{Method: "DELETE", Path: "/api/v1/spaces/default/types/note", Token: limited}).problem(problem.Forbidden)

		e.call(t, "PUT", "/api/v1/spaces/default/types/Task", def).problem(problem.BadRequest)
		e.call(t, "PUT", path, "[]").problem(problem.BadRequest)
		e.call(t, "PUT", path, "{").problem(problem.BadRequest)
		e.call(t, "PUT", path, map[string]any{"strict": "yes"}).problem(problem.BadRequest)
		e.call(t, "PUT", "/api/v1/spaces/missing/types/task", def).problem(problem.NotFound)

		r = e.call(t, "DELETE", path, nil)
		if r.status != http.StatusNoContent || len(r.body) != 0 || r.header.Get("Eddy-Seq") == "" {
			t.Errorf("delete = %d %s, Eddy-Seq %q", r.status, r.body, r.header.Get("Eddy-Seq"))
		}
		e.call(t, "GET", path, nil).problem(problem.NotFound)
		e.call(t, "DELETE", path, nil).problem(problem.NotFound)
	})
}
