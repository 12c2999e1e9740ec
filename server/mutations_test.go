package server

import (
	"net/http"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

const mutationsPath = "/api/v1/spaces/default/mutations"

type receiptsResult struct {
	Receipts []map[string]any `json:"receipts"`
}

func TestMutations(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		body := map[string]any{"mutations": []any{
			map[string]any{"mutationId": "m-1", "op": "put", "type": "task", "entityId": "t1", "properties": map[string]any{"title": "x"}},
			map[string]any{"op": "patch", "type": "task", "entityId": "t1", "patch": map[string]any{"status": "done"}, "ifVersion": 1},
			map[string]any{"op": "link", "type": "task", "entityId": "t1", "rel": "assignee", "target": map[string]any{"type": "user", "id": "u1"}},
			map[string]any{"op": "patch", "type": "task", "entityId": "t1", "patch": map[string]any{"x": 1}, "ifVersion": 1},
			map[string]any{"op": "put", "type": "task", "entityId": "t1", "properties": map[string]any{"title": "x", "status": "done"}},
		}}
		var res receiptsResult
		r := e.call(t, "POST", mutationsPath, body).want(http.StatusOK)
		r.decode(&res)
		want := []string{"applied", "applied", "applied", "rejected", "noop"}
		if len(res.Receipts) != len(want) {
			t.Fatalf("receipts = %s", r.body)
		}
		for i, w := range want {
			if res.Receipts[i]["status"] != w {
				t.Errorf("receipt %d = %v, want %s", i, res.Receipts[i], w)
			}
		}
		if r.seq() != 3 {
			t.Errorf("Eddy-Seq = %d, want 3", r.seq())
		}

		// Atomic: one rejection rolls the batch back.
		atomic := map[string]any{"atomic": true, "mutations": []any{
			map[string]any{"op": "put", "type": "task", "entityId": "t2", "properties": map[string]any{}},
			map[string]any{"op": "delete", "type": "task", "entityId": "t1", "ifVersion": 1},
		}}
		r = e.call(t, "POST", mutationsPath, atomic).want(http.StatusOK)
		r.decode(&res)
		for i, rc := range res.Receipts {
			if rc["status"] != "rejected" {
				t.Errorf("atomic receipt %d = %v", i, rc)
			}
		}
		if r.seq() != 3 || e.head(t, "default") != 3 {
			t.Errorf("atomic rejection appended: Eddy-Seq %d", r.seq())
		}
	})
}

func TestMutationsBadRequests(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		bad := []any{
			"",
			"{",
			"[]",
			`{"mutations": []}`,
			`{"mutations": {}}`,
			`{"mutations": [{"op": "put", "type": "task", "entityId": "t1", "properties": {}}], "atomic": "yes"}`,
			`{"mutations": [{"op": "put", "type": "task", "entityId": "t1", "properties": {}}], "extra": 1}`,
			`{"mutations": [{"op": "put", "type": "task", "entityId": "t1", "properties": {}}]} {}`,
			`{"mutations": [{"op": "nope", "type": "task", "entityId": "t1"}]}`,
			`{"mutations": [{"op": "put", "type": "Task", "entityId": "t1", "properties": {}}]}`,
			`{"mutations": [{"op": "put", "type": "task", "entityId": "a b", "properties": {}}]}`,
			`{"mutations": [{"op": "fire", "type": "task", "entityId": "t1"}]}`,
		}
		for _, b := range bad {
			e.call(t, "POST", mutationsPath, b).problem(problem.BadRequest)
		}
		e.call(t, "POST", mutationsPath+"?atomic=true", `{"mutations": [{"op": "delete", "type": "task", "entityId": "t1"}]}`).problem(problem.BadRequest)
		if h := e.head(t, "default"); h != 0 {
			t.Errorf("head = %d after bad requests", h)
		}
		e.call(t, "POST", "/api/v1/spaces/missing/mutations", `{"mutations": [{"op": "put", "type": "task", "entityId": "t1", "properties": {}}]}`).problem(problem.NotFound)
	})
}

func TestMutationsAuthorization(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		writer := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, Types: []string{"task"}})
		put := func(typ string) map[string]any {
			return map[string]any{"op": "put", "type": typ, "entityId": "x", "properties": map[string]any{}}
		}
		e.do(t, req{Method: "POST", Path: mutationsPath, Token: reader, Body: map[string]any{"mutations": []any{put("task")}}}).problem(problem.Forbidden)
		e.do(t, req{Method: "POST", Path: mutationsPath, Token: writer, Body: map[string]any{"mutations": []any{put("task"), put("note")}}}).problem(problem.Forbidden)
		merge := map[string]any{"op": "merge", "type": "task", "entityId": "x", "from": map[string]any{"type": "note", "id": "y"}}
		e.do(t, req{Method: "POST", Path: mutationsPath, Token: writer, Body: map[string]any{"mutations": []any{merge}}}).problem(problem.Forbidden)
		if h := e.head(t, "default"); h != 0 {
			t.Errorf("head = %d after refused writes", h)
		}
		r := e.do(t, req{Method: "POST", Path: mutationsPath, Token: writer, Body: map[string]any{"mutations": []any{put("task")}}}).want(http.StatusOK)
		if r.seq() != 1 {
			t.Errorf("Eddy-Seq = %d", r.seq())
		}
	})
}
