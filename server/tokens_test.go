package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		var created struct {
			ID    string `json:"id"`
			Token string `json:"token"`
		}
		r := e.call(t, "POST", "/api/v1/tokens", map[string]any{
			"space": "default", "role": "writer", "actor": "bot", "types": []string{"task"},
		}).want(http.StatusCreated)
		r.decode(&created)
		if !strings.HasPrefix(created.ID, "tok_") || !strings.HasPrefix(created.Token, "eddy_") {
			t.Fatalf("created = %s", r.body)
		}
		if k := keys(r.obj()); len(k) != 2 {
			t.Errorf("create answer keys = %v", k)
		}
		w := e.do(t, req{Method: "PUT", Path: "/api/v1/spaces/default/entities/task/a", Token: created.Token, Body: map[string]any{}}).want(http.StatusCreated)
		var res writeResult
		w.decode(&res)
		var c changesResult
		e.call(t, "GET", "/api/v1/spaces/default/changes", nil).want(http.StatusOK).decode(c.reset())
		if len(c.Changes) != 1 || c.Changes[0]["actor"] != "bot" {
			t.Errorf("write authored by %v", c.Changes)
		}

		r = e.call(t, "GET", "/api/v1/tokens", nil).want(http.StatusOK)
		if strings.Contains(string(r.body), created.Token) || strings.Contains(string(r.body), `"token"`) || strings.Contains(string(r.body), "hash") {
			t.Errorf("list shows secrets: %s", r.body)
		}
		var list struct {
			Tokens []map[string]any `json:"tokens"`
		}
		r.decode(&list)
		if len(list.Tokens) != 2 {
			t.Errorf("tokens = %v", list.Tokens)
		}

		r = e.call(t, "DELETE", "/api/v1/tokens/"+created.ID, nil)
		if r.status != http.StatusNoContent {
			t.Errorf("revoke = %d %s", r.status, r.body)
		}
		e.do(t, req{Method: "GET", Path: "/api/v1", Token: created.Token}).problem(problem.Unauthorized)
		e.call(t, "DELETE", "/api/v1/tokens/"+created.ID, nil).problem(problem.NotFound)
	})
}

func TestTokensBadRequests(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		bad := []any{
			map[string]any{"space": "default", "role": "root"},
			map[string]any{"space": "default"},
			map[string]any{"role": "reader"},
			map[string]any{"space": "Default", "role": "reader"},
			map[string]any{"space": "default", "role": "reader", "types": []string{"Bad"}},
			map[string]any{"space": "default", "role": "reader", "scopes": []string{"all"}},
			map[string]any{"space": "default", "role": "reader", "secret": "x"},
			map[string]any{"space": "default", "role": "reader", "types": "task"},
			"{",
			"",
		}
		for _, b := range bad {
			e.call(t, "POST", "/api/v1/tokens", b).problem(problem.BadRequest)
		}
		e.call(t, "POST", "/api/v1/tokens", map[string]any{"space": "missing", "role": "reader"}).problem(problem.NotFound)
		e.call(t, "POST", "/api/v1/tokens", map[string]any{"space": "*", "role": "reader", "scopes": []string{"log:read"}}).want(http.StatusCreated)

		writer := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter})
		e.do(t, req{Method: "POST", Path: "/api/v1/tokens", Token: writer, Body: map[string]any{"space": "default", "role": "reader"}}).problem(problem.Forbidden)
		e.do(t, req{Method: "GET", Path: "/api/v1/tokens", Token: writer}).problem(problem.Forbidden)
		e.do(t, req{Method: "DELETE", Path: "/api/v1/tokens/tok_x", Token: writer}).problem(problem.Forbidden)

		// An admin bound to one space manages that space's tokens only.
		e.call(t, "PUT", "/api/v1/spaces/acme", nil).want(http.StatusCreated)
		spaceAdmin := e.token(auth.CreateParams{Space: "acme", Role: auth.RoleAdmin})
		e.do(t, req{Method: "POST", Path: "/api/v1/tokens", Token: spaceAdmin, Body: map[string]any{"space": "default", "role": "reader"}}).problem(problem.Forbidden)
		e.do(t, req{Method: "POST", Path: "/api/v1/tokens", Token: spaceAdmin, Body: map[string]any{"space": "*", "role": "reader"}}).problem(problem.Forbidden)
		e.do(t, req{Method: "POST", Path: "/api/v1/tokens", Token: spaceAdmin, Body: map[string]any{"space": "acme", "role": "reader"}}).want(http.StatusCreated)
		var list struct {
			Tokens []map[string]any `json:"tokens"`
		}
		e.do(t, req{Method: "GET", Path: "/api/v1/tokens", Token: spaceAdmin}).want(http.StatusOK).decode(&list)
		for _, tok := range list.Tokens {
			if tok["space"] != "acme" {
				t.Errorf("space admin sees %v", tok)
			}
		}
		ts, err := e.auth.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range ts {
			if tok.Space != "acme" {
				e.do(t, req{Method: "DELETE", Path: "/api/v1/tokens/" + tok.ID, Token: spaceAdmin}).problem(problem.Forbidden)
				break
			}
		}
	})
}
