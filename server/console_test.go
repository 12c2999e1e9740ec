package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

// wantConsoleHeaders fails unless r carries the console's security
// headers.
func wantConsoleHeaders(t *testing.T, what string, r *resp) {
	t.Helper()
	csp := r.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: Content-Security-Policy %q lacks %q", what, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("%s: Content-Security-Policy %q allows inline or eval'd script", what, csp)
	}
	for k, v := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
		if got := r.header.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got, v)
		}
	}
}

func TestConsoleMount(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	for _, path := range []string{"/", "/spaces/default/stream", "/spaces/default/rows/7", "/spaces/a/triggers/b", "/spaces/default/views"} {
		r := e.do(t, req{Method: "GET", Path: path})
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
			!strings.Contains(string(r.body), `<script type="module" src="/assets/app.js">`) {
			t.Errorf("GET %s without a token: %d %s %.80s", path, r.status, r.header.Get("Content-Type"), r.body)
		}
		wantConsoleHeaders(t, path, r)
		if strings.Contains(string(r.body), "<script>") {
			t.Errorf("GET %s: the shell has an inline script", path)
		}
	}
	js := e.do(t, req{Method: "GET", Path: "/assets/app.js"})
	if js.status != http.StatusOK || js.header.Get("Content-Type") != "text/javascript; charset=utf-8" || js.header.Get("ETag") == "" {
		t.Fatalf("GET /assets/app.js: %d %v", js.status, js.header)
	}
	wantConsoleHeaders(t, "app.js", js)
	if r := e.do(t, req{Method: "GET", Path: "/assets/app.js", Header: map[string]string{"If-None-Match": js.header.Get("ETag")}}); r.status != http.StatusNotModified {
		t.Errorf("revalidating app.js: %d, want 304", r.status)
	}
	for _, path := range []string{"/assets/nope.js", "/assets/index.html", "/assets/"} {
		if r := e.do(t, req{Method: "GET", Path: path}); r.status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, r.status)
		}
	}

	// The API keeps its problem answers around the console.
	for _, path := range []string{"/", "/spaces/default/stream", "/assets/app.js"} {
		if got := e.do(t, req{Method: "POST", Path: path}).want(http.StatusMethodNotAllowed).obj(); got["error"] == nil {
			t.Errorf("POST %s: %v, want a problem", path, got)
		}
	}
	e.call(t, "GET", "/nope", nil).problem(problem.NotFound)
	e.do(t, req{Method: "GET", Path: "/nope"}).problem(problem.Unauthorized)
	e.call(t, "GET", "/api/v1/nope", nil).problem(problem.NotFound)
	e.call(t, "DELETE", "/api/v1", nil).want(http.StatusMethodNotAllowed)
	e.do(t, req{Method: "GET", Path: "/api/v1/nope"}).problem(problem.Unauthorized)
	e.do(t, req{Method: "GET", Path: "/healthz"}).want(http.StatusOK)
}

func TestNoTokenInQueryString(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
	for _, secret := range []string{e.admin, reader} {
		for _, path := range []string{
			"/api/v1?access_token=" + secret,
			"/api/v1?token=" + secret,
			"/api/v1?authorization=Bearer%20" + secret,
			"/api/v1/whoami?access_token=" + secret,
			"/api/v1/spaces/default/changes?watch=1&access_token=" + secret,
			"/api/v1/spaces/default/changes?before=0&token=" + secret,
		} {
			r := e.do(t, req{Method: "GET", Path: path})
			pe := r.problem(problem.Unauthorized)
			if r.header.Get("WWW-Authenticate") == "" || strings.Contains(pe.Message, secret) {
				t.Errorf("GET %s: %v, %q", path, r.header, pe.Message)
			}
		}
	}
	// With a header, a token parameter is just an unknown parameter.
	pe := e.do(t, req{Method: "GET", Path: "/api/v1?access_token=" + reader, Token: e.admin}).problem(problem.BadRequest)
	wantDetail(t, "access_token beside a header", pe, "parameter", "access_token")
	e.do(t, req{Method: "GET", Path: "/api/v1"}).problem(problem.Unauthorized)
	e.do(t, req{Method: "GET", Path: "/api/v1/spaces/default/changes?watch=1"}).problem(problem.Unauthorized)
}

func TestWhoami(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	var me whoamiAnswer
	e.call(t, "GET", "/api/v1/whoami", nil).want(http.StatusOK).decode(&me)
	if me.Role != auth.RoleAdmin || me.Actor != "owner" || me.Space != auth.AllSpaces || me.ID == "" || me.Types != nil {
		t.Errorf("admin whoami = %+v", me)
	}
	reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Actor: "auditor", Types: []string{"task"}, Scopes: []string{auth.ScopeLogRead}})
	raw := e.do(t, req{Method: "GET", Path: "/api/v1/whoami", Token: reader}).want(http.StatusOK)
	raw.decode(&me)
	if me.Role != auth.RoleReader || me.Actor != "auditor" || me.Space != "default" || len(me.Types) != 1 || len(me.Scopes) != 1 {
		t.Errorf("reader whoami = %+v", me)
	}
	if strings.Contains(string(raw.body), reader) {
		t.Error("whoami shows the secret")
	}
	e.do(t, req{Method: "GET", Path: "/api/v1/whoami"}).problem(problem.Unauthorized)
	e.call(t, "GET", "/api/v1/whoami?x=1", nil).problem(problem.BadRequest)
}
