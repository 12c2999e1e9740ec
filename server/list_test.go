package server

import (
	"net/http"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

type listResult struct {
	Items []map[string]any `json:"items"`
	Head  int64            `json:"head"`
	Next  *string          `json:"next"`
}

func TestListEntities(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		base := "/api/v1/spaces/default/entities/task"
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			e.call(t, "PUT", base+"/"+id, map[string]any{"v": 1}).want(http.StatusCreated)
		}
		e.call(t, "PUT", "/api/v1/spaces/default/entities/note/x", map[string]any{}).want(http.StatusCreated)

		var page listResult
		e.call(t, "GET", base+"?limit=2", nil).want(http.StatusOK).decode(&page)
		if len(page.Items) != 2 || page.Items[0]["id"] != "a" || page.Head != 6 || page.Next == nil {
			t.Fatalf("first page = %+v", page)
		}
		// Changes after the first page do not show in later pages.
		e.call(t, "PUT", base+"/c", map[string]any{"v": 2}).want(http.StatusOK)
		e.call(t, "DELETE", base+"/d", nil).want(http.StatusOK)
		e.call(t, "PUT", base+"/bb", map[string]any{"v": 1}).want(http.StatusCreated)

		var ids []any
		for _, it := range page.Items {
			ids = append(ids, it["id"])
		}
		for page.Next != nil {
			next := *page.Next
			page = listResult{}
			e.call(t, "GET", base+"?limit=2&after="+next, nil).want(http.StatusOK).decode(&page)
			if page.Head != 6 {
				t.Fatalf("page head = %d, want the first page's 6", page.Head)
			}
			for _, it := range page.Items {
				ids = append(ids, it["id"])
				if it["id"] == "c" && it["properties"].(map[string]any)["v"] != 1.0 {
					t.Errorf("c as of 6 = %v", it)
				}
			}
		}
		if want := []any{"a", "b", "c", "d", "e"}; len(ids) != len(want) || ids[2] != "c" || ids[3] != "d" {
			t.Errorf("ids = %v, want %v", ids, want)
		}

		e.call(t, "GET", base, nil).want(http.StatusOK).decode(&page)
		if page.Head != 9 || len(page.Items) != 5 || page.Next != nil {
			t.Errorf("fresh list = %+v", page)
		}
		e.call(t, "GET", "/api/v1/spaces/default/entities/none", nil).want(http.StatusOK).decode(&page)
		if page.Items == nil || len(page.Items) != 0 {
			t.Errorf("empty list = %+v", page)
		}

		for _, q := range []string{"limit=0", "limit=1001", "limit=x", "after=!!", "after=e30", "watch=2", "from=1", "limit=1&limit=2",
			"watch=1&limit=1", "watch=1&types=task", "watch=1&after=x"} {
			e.call(t, "GET", base+"?"+q, nil).problem(problem.BadRequest)
		}
		p := e.call(t, "GET", base+"?watch=yes", nil).problem(problem.BadRequest)
		if p.Details["parameter"] != "watch" {
			t.Errorf("watch details = %v", p.Details)
		}
		e.call(t, "GET", "/api/v1/spaces/missing/entities/task", nil).problem(problem.NotFound)

		limited := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Types: []string{"task"}})
		e.do(t, req{Method: "GET", Path: base, Token: limited}).want(http.StatusOK)
		e.do(t, req{Method: "GET", Path: "/api/v1/spaces/default/entities/note", Token: limited}).problem(problem.Forbidden)
	})
}

func TestListCompacted(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		base := "/api/v1/spaces/default/entities/task"
		for _, id := range []string{"a", "b", "c"} {
			e.call(t, "PUT", base+"/"+id, map[string]any{}).want(http.StatusCreated)
		}
		var page listResult
		e.call(t, "GET", base+"?limit=1", nil).want(http.StatusOK).decode(&page)
		e.call(t, "PUT", base+"/d", map[string]any{}).want(http.StatusCreated)
		e.call(t, "POST", "/api/v1/spaces/default/prune", map[string]any{"through": 4}).want(http.StatusOK)
		p := e.call(t, "GET", base+"?limit=1&after="+*page.Next, nil).problem(problem.Compacted)
		if p.Details["horizon"] != 4.0 {
			t.Errorf("details = %v", p.Details)
		}
	})
}
