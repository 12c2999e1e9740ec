package server

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

func TestCommit(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		base := "/api/v1/spaces/default/changes/"
		e.call(t, "PUT", "/api/v1/spaces/default/entities/task/t1", map[string]any{"title": "x", "status": "open"}).want(http.StatusCreated)
		seq := e.do(t, req{Method: "PATCH", Path: "/api/v1/spaces/default/entities/task/t1", Token: e.admin, Body: `{"status": "done"}`,
			Header: map[string]string{"Content-Type": "application/merge-patch+json"}}).want(http.StatusOK).seq()
		note := e.call(t, "PUT", "/api/v1/spaces/default/entities/note/n1", map[string]any{"text": "y"}).want(http.StatusCreated).seq()

		got := e.call(t, "GET", fmt.Sprint(base, seq), nil).want(http.StatusOK).obj()
		if k := keys(got); !slices.Equal(k, []string{"actor", "changes", "entityId", "op", "payload", "provenance", "receipt", "seq", "ts", "type"}) {
			t.Fatalf("admin commit keys = %v", k)
		}
		ch := got["changes"].([]any)[0].(map[string]any)
		before, after := ch["before"].(map[string]any)["properties"].(map[string]any), ch["after"].(map[string]any)["properties"].(map[string]any)
		if ch["kind"] != "updated" || before["status"] != "open" || after["status"] != "done" || after["title"] != "x" {
			t.Errorf("change = %v", ch)
		}
		if prov := got["provenance"].(map[string]any); prov["actor"] != "owner" || prov["via"] != "api" {
			t.Errorf("provenance = %v", prov)
		}
		if rc := got["receipt"].(map[string]any); rc["status"] != "applied" || rc["seq"] != float64(seq) {
			t.Errorf("receipt = %v", rc)
		}
		// The same commit as the raw log has it.
		var pull struct {
			Commits []map[string]any `json:"commits"`
		}
		e.call(t, "GET", fmt.Sprintf("/api/v1/spaces/default/log?after=%d&limit=1", seq-1), nil).want(http.StatusOK).decode(&pull)
		if fmt.Sprint(pull.Commits[0]) != fmt.Sprint(got) {
			t.Errorf("commit %v\nlog    %v", got, pull.Commits[0])
		}

		// A reader sees the row and its changes, not the receipt and
		// provenance; a types allow-list keeps other rows from it.
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Types: []string{"task"}})
		rg := e.do(t, req{Method: "GET", Path: fmt.Sprint(base, seq), Token: reader}).want(http.StatusOK).obj()
		if k := keys(rg); !slices.Equal(k, []string{"actor", "changes", "entityId", "op", "payload", "seq", "ts", "type"}) {
			t.Errorf("reader commit keys = %v", k)
		}
		e.do(t, req{Method: "GET", Path: fmt.Sprint(base, note), Token: reader}).problem(problem.Forbidden)
		trusted := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Scopes: []string{auth.ScopeLogRead}})
		if k := keys(e.do(t, req{Method: "GET", Path: fmt.Sprint(base, seq), Token: trusted}).want(http.StatusOK).obj()); !slices.Contains(k, "provenance") {
			t.Errorf("log:read commit keys = %v", k)
		}
		other := e.token(auth.CreateParams{Space: "other", Role: auth.RoleAdmin})
		e.do(t, req{Method: "GET", Path: fmt.Sprint(base, seq), Token: other}).problem(problem.Forbidden)
		e.do(t, req{Method: "GET", Path: fmt.Sprint(base, seq)}).problem(problem.Unauthorized)

		for _, bad := range []string{"0", "-1", "x", fmt.Sprint(note + 1)} {
			wantDetail(t, "seq "+bad, e.call(t, "GET", base+bad, nil).problem(problem.BadRequest), "parameter", "seq")
		}
		e.call(t, "GET", fmt.Sprint(base, seq, "?x=1"), nil).problem(problem.BadRequest)
		e.call(t, "GET", "/api/v1/spaces/nope/changes/1", nil).problem(problem.NotFound)
		e.call(t, "POST", "/api/v1/spaces/default/prune", map[string]any{"through": seq}).want(http.StatusOK)
		e.call(t, "GET", fmt.Sprint(base, seq), nil).problem(problem.Compacted)
		e.call(t, "GET", fmt.Sprint(base, note), nil).want(http.StatusOK)
	})
}

func TestListAsOfHead(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		list := "/api/v1/spaces/default/entities/task"
		first := e.call(t, "PUT", list+"/a", map[string]any{"v": 1}).want(http.StatusCreated).seq()
		e.call(t, "PUT", list+"/b", map[string]any{"v": 1}).want(http.StatusCreated)
		e.call(t, "PUT", list+"/a", map[string]any{"v": 2}).want(http.StatusOK)
		e.call(t, "DELETE", list+"/b", nil).want(http.StatusOK)
		head := e.head(t, "default")

		var page listAnswer
		e.call(t, "GET", fmt.Sprintf("%s?head=%d", list, first), nil).want(http.StatusOK).decode(&page)
		if page.Head != first || len(page.Items) != 1 || string(page.Items[0].Properties) != `{"v":1}` {
			t.Errorf("as of %d: %+v", first, page)
		}
		e.call(t, "GET", fmt.Sprintf("%s?head=%d&limit=1", list, first+1), nil).want(http.StatusOK).decode(&page)
		if page.Head != first+1 || len(page.Items) != 1 || page.Items[0].ID != "a" || page.Next == "" {
			t.Fatalf("as of %d, page 1: %+v", first+1, page)
		}
		next := page.Next
		e.call(t, "GET", fmt.Sprintf("%s?head=%d&limit=1&after=%s", list, first+1, next), nil).want(http.StatusOK).decode(&page)
		if len(page.Items) != 1 || page.Items[0].ID != "b" {
			t.Errorf("as of %d, page 2: %+v", first+1, page)
		}
		e.call(t, "GET", list, nil).want(http.StatusOK).decode(&page)
		if page.Head != head || len(page.Items) != 1 {
			t.Errorf("now: %+v", page)
		}
		for _, bad := range []string{"0", "-1", "x", fmt.Sprint(head + 1)} {
			wantDetail(t, "head "+bad, e.call(t, "GET", list+"?head="+bad, nil).problem(problem.BadRequest), "parameter", "head")
		}
		wantDetail(t, "head beside another snapshot's cursor",
			e.call(t, "GET", fmt.Sprintf("%s?head=%d&after=%s", list, head, next), nil).problem(problem.BadRequest), "parameter", "head")
		e.call(t, "POST", "/api/v1/spaces/default/prune", map[string]any{"through": first + 1}).want(http.StatusOK)
		e.call(t, "GET", fmt.Sprintf("%s?head=%d", list, first), nil).problem(problem.Compacted)
	})
}
