package server

import (
	"net/http"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

func TestDiscovery(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, "PUT", "/api/v1/spaces/acme", nil).want(http.StatusCreated)
		var body struct {
			Version string `json:"version"`
			Spaces  []map[string]any
		}
		e.call(t, "GET", "/api/v1", nil).want(http.StatusOK).decode(&body)
		if body.Version != "test" || len(body.Spaces) != 2 {
			t.Fatalf("discovery = %+v", body)
		}
		if got := keys(body.Spaces[0]); !slices.Equal(got, []string{"epoch", "head", "horizon", "space"}) {
			t.Errorf("space keys = %v", got)
		}

		bound := e.token(auth.CreateParams{Space: "acme", Role: auth.RoleReader})
		e.do(t, req{Method: "GET", Path: "/api/v1", Token: bound}).want(http.StatusOK).decode(&body)
		if len(body.Spaces) != 1 || body.Spaces[0]["space"] != "acme" {
			t.Errorf("bound discovery = %+v", body.Spaces)
		}
		p := e.call(t, "GET", "/api/v1?x=1", nil).problem(problem.BadRequest)
		if p.Details["parameter"] != "x" {
			t.Errorf("details = %v", p.Details)
		}
	})
}

func TestSpaces(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		r := e.call(t, "GET", "/api/v1/spaces/default", nil).want(http.StatusOK)
		got := r.obj()
		if k := keys(got); !slices.Equal(k, []string{"epoch", "head", "horizon", "retainedFrom", "schemaVersion", "space"}) {
			t.Errorf("space keys = %v", k)
		}
		if got["space"] != "default" || got["head"] != 0.0 || got["horizon"] != 0.0 || got["retainedFrom"] != 1.0 || got["epoch"] == "" {
			t.Errorf("space = %v", got)
		}

		r = e.call(t, "PUT", "/api/v1/spaces/acme.eu", nil).want(http.StatusCreated)
		if r.obj()["space"] != "acme.eu" || r.seq() != 0 {
			t.Errorf("created = %s, Eddy-Seq %q", r.body, r.header.Get("Eddy-Seq"))
		}
		e.call(t, "PUT", "/api/v1/spaces/acme.eu", "{}").want(http.StatusOK)
		e.call(t, "PUT", "/api/v1/spaces/acme.eu", "{nope").problem(problem.BadRequest)

		for _, bad := range []string{"Acme", "1acme", "acme_eu", "acme..eu"} {
			p := e.call(t, "PUT", "/api/v1/spaces/"+bad, nil).problem(problem.BadRequest)
			if p.Details["parameter"] != "space" {
				t.Errorf("%s: details = %v", bad, p.Details)
			}
		}
		e.call(t, "GET", "/api/v1/spaces/missing", nil).problem(problem.NotFound)

		writer := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter})
		e.do(t, req{Method: "PUT", Path: "/api/v1/spaces/default", Token: writer}).problem(problem.Forbidden)
		e.do(t, req{Method: "GET", Path: "/api/v1/spaces/acme.eu", Token: writer}).problem(problem.Forbidden)
		e.do(t, req{Method: "GET", Path: "/api/v1/spaces/default", Token: writer}).want(http.StatusOK)
	})
}

func TestPrune(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		for _, id := range []string{"a", "b", "c"} {
			e.call(t, "PUT", "/api/v1/spaces/default/entities/task/"+id, map[string]any{"n": id}).want(http.StatusCreated)
		}
		prune := "/api/v1/spaces/default/prune"
		bad := []any{
			map[string]any{"through": 4},
			map[string]any{"force": true},
			map[string]any{"through": "2"},
			map[string]any{"through": 1, "extra": 1},
			"{",
			"",
			`{"through": 1} {}`,
		}
		for _, b := range bad {
			e.call(t, "POST", prune, b).problem(problem.BadRequest)
		}
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.do(t, req{Method: "POST", Path: prune, Token: reader, Body: map[string]any{"through": 1}}).problem(problem.Forbidden)

		r := e.call(t, "POST", prune, map[string]any{"through": 2, "force": false}).want(http.StatusOK)
		got := r.obj()
		if got["horizon"] != 2.0 || got["retainedFrom"] != 3.0 || got["head"] != 3.0 || r.seq() != 3 {
			t.Errorf("pruned = %v, Eddy-Seq %d", got, r.seq())
		}
		e.call(t, "POST", prune, map[string]any{"through": 1}).problem(problem.BadRequest)
		e.call(t, "POST", prune, map[string]any{"through": 2}).want(http.StatusOK)

		p := e.call(t, "GET", "/api/v1/spaces/default/changes?from=1", nil).problem(problem.Compacted)
		if p.Details["horizon"] != 2.0 {
			t.Errorf("compacted details = %v", p.Details)
		}
		var page struct {
			Changes []map[string]any `json:"changes"`
			Cursor  int64            `json:"cursor"`
		}
		e.call(t, "GET", "/api/v1/spaces/default/changes", nil).want(http.StatusOK).decode(&page)
		if len(page.Changes) != 1 || page.Changes[0]["seq"] != 3.0 || page.Cursor != 3 {
			t.Errorf("changes after prune = %+v", page)
		}
		// Everything pruned: the head stays.
		r = e.call(t, "POST", prune, map[string]any{"through": 3}).want(http.StatusOK)
		if got := r.obj(); got["head"] != 3.0 || got["horizon"] != 3.0 {
			t.Errorf("fully pruned = %v", got)
		}
		e.call(t, "POST", "/api/v1/spaces/missing/prune", map[string]any{"through": 0}).problem(problem.NotFound)
	})
}
