package server

import (
	"net/http"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

// savedTrigger is the answer to PUT .../triggers/{name}.
type savedTrigger struct {
	Name     string `json:"name"`
	Function string `json:"function"`
	Warnings []struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Cycle   []string `json:"cycle"`
	} `json:"warnings"`
}

func TestTriggersAPI(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		fns := "/api/v1/spaces/default/functions/"
		e.call(t, "PUT", fns+"to-note", map[string]any{"kind": "expr", "writes": []string{"note"}, "code": "nil"}).want(http.StatusCreated)
		e.call(t, "PUT", fns+"to-task", map[string]any{"kind": "expr", "writes": []string{"task"}, "code": "nil"}).want(http.StatusCreated)

		path := "/api/v1/spaces/default/triggers/on-task"
		onTask := map[string]any{
			"source":   map[string]any{"changes": map[string]any{"types": []string{"task"}, "when": "row.op == 'patch'"}},
			"function": "to-note",
		}
		r := e.call(t, "PUT", path, onTask).want(http.StatusCreated)
		raw := r.obj()
		if k := keys(raw); !slices.Equal(k, []string{"coalesce", "delivery", "echo", "enabled", "function", "name", "source", "start", "warnings"}) {
			t.Errorf("put trigger keys = %v", k)
		}
		if ws, ok := raw["warnings"].([]any); !ok || len(ws) != 0 {
			t.Errorf("warnings = %v, want []", raw["warnings"])
		}
		e.call(t, "PUT", path, onTask).want(http.StatusOK)

		var saved savedTrigger
		e.call(t, "PUT", "/api/v1/spaces/default/triggers/on-note", map[string]any{
			"source": map[string]any{"changes": map[string]any{"types": []string{"note"}}}, "function": "to-task",
		}).want(http.StatusCreated).decode(&saved)
		if len(saved.Warnings) != 1 || saved.Warnings[0].Code != "cycle" ||
			!slices.Equal(saved.Warnings[0].Cycle, []string{"on-note", "on-task", "on-note"}) || saved.Warnings[0].Message == "" {
			t.Errorf("warnings = %+v", saved.Warnings)
		}

		got := e.call(t, "GET", path, nil).want(http.StatusOK).obj()
		if got["name"] != "on-task" || got["warnings"] != nil {
			t.Errorf("get trigger = %v", got)
		}
		var list struct {
			Triggers []map[string]any `json:"triggers"`
		}
		e.call(t, "GET", "/api/v1/spaces/default/triggers", nil).want(http.StatusOK).decode(&list)
		if len(list.Triggers) != 2 || list.Triggers[0]["name"] != "on-note" {
			t.Errorf("triggers = %v", list.Triggers)
		}

		// A function a trigger names cannot be deleted.
		pe := e.call(t, "DELETE", fns+"to-note", nil).problem(problem.Conflict)
		if ts, _ := pe.Details["triggers"].([]any); len(ts) != 1 || ts[0] != "on-task" {
			t.Errorf("conflict details = %v", pe.Details)
		}

		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.do(t, req{Method: "GET", Path: path, Token: reader}).want(http.StatusOK)
		e.do(t, req{Method: "PUT", Path: path, Token: reader, Body: onTask}).problem(problem.Forbidden)
		e.do(t, req{Method: "DELETE", Path: path, Token: reader}).problem(problem.Forbidden)

		r = e.call(t, "DELETE", path, nil)
		if r.status != http.StatusNoContent || r.header.Get("Eddy-Seq") == "" {
			t.Errorf("delete = %d %s", r.status, r.body)
		}
		e.call(t, "GET", path, nil).problem(problem.NotFound)
		e.call(t, "DELETE", path, nil).problem(problem.NotFound)
		e.call(t, "DELETE", fns+"to-note", nil).want(http.StatusNoContent)
	})
}

func TestTriggerErrors(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, "PUT", "/api/v1/spaces/default/functions/f", map[string]any{"kind": "go", "handler": "h"}).want(http.StatusCreated)
		changes := func(c map[string]any) map[string]any {
			return map[string]any{"source": map[string]any{"changes": c}, "function": "f"}
		}
		cron := func(c map[string]any) map[string]any {
			return map[string]any{"source": map[string]any{"cron": c}, "function": "f"}
		}
		tests := []struct {
			name     string
			body     any
			field    string
			position bool
		}{
			{"unknown function", map[string]any{"source": map[string]any{"changes": map[string]any{}}, "function": "nope"}, "function", false},
			{"when does not compile", changes(map[string]any{"when": "entity.x ==\n  "}), "source.changes.when", true},
			{"when is not bool", changes(map[string]any{"when": "1 + 2"}), "source.changes.when", false},
			{"unknown op", changes(map[string]any{"ops": []string{"explode"}}), "source.changes.ops", false},
			{"bad schedule", cron(map[string]any{"schedule": "every minute"}), "source.cron.schedule", false},
			{"bad timezone", cron(map[string]any{"schedule": "@every 1m", "timezone": "Mars/Olympus"}), "source.cron.timezone", false},
			{"bad catch-up", cron(map[string]any{"schedule": "@every 1m", "catchUp": "some"}), "source.cron.catchUp", false},
			{"no source", map[string]any{"function": "f"}, "source", false},
			{"unknown field", map[string]any{"source": map[string]any{"changes": map[string]any{}}, "function": "f", "x": 1}, "x", false},
		}
		for _, tt := range tests {
			pe := e.call(t, "PUT", "/api/v1/spaces/default/triggers/t", tt.body).problem(problem.BadRequest)
			if pe.Details["field"] != tt.field || (tt.position != (pe.Details["position"] != nil)) {
				t.Errorf("%s: details = %v, want field %q (position %v)", tt.name, pe.Details, tt.field, tt.position)
			}
		}
		e.call(t, "PUT", "/api/v1/spaces/default/triggers/Bad_Name", changes(map[string]any{})).problem(problem.BadRequest)
		e.call(t, "GET", "/api/v1/spaces/default/triggers/Bad_Name", nil).problem(problem.BadRequest)
		e.call(t, "GET", "/api/v1/spaces/default/triggers?limit=1", nil).problem(problem.BadRequest)
		e.call(t, "GET", "/api/v1/spaces/nowhere/triggers", nil).problem(problem.NotFound)
		e.call(t, "GET", "/api/v1/spaces/default/triggers/t", nil).problem(problem.NotFound)
	})
}
