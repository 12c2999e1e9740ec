package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		for _, path := range []string{"/healthz", "/readyz"} {
			r := e.do(t, req{Method: "GET", Path: path}).want(http.StatusOK)
			if got := r.obj()["status"]; got != "ok" {
				t.Errorf("%s status = %v", path, got)
			}
		}
	})
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		tests := []struct {
			name   string
			header string
		}{
			{"missing", ""},
			{"wrong scheme", "Basic " + e.admin},
			{"empty bearer", "Bearer "},
			{"malformed", "Bearer nope"},
			{"unknown", "Bearer eddy_" + strings.Repeat("a", 52)},
		}
		for _, tt := range tests {
			for _, path := range []string{"/api/v1", "/api/v1/spaces/default", "/no/such/route"} {
				h := map[string]string{}
				if tt.header != "" {
					h["Authorization"] = tt.header
				}
				r := e.do(t, req{Method: "GET", Path: path, Header: h})
				r.problem(problem.Unauthorized)
				if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s %s: WWW-Authenticate = %q", tt.name, path, r.header.Get("WWW-Authenticate"))
				}
			}
		}
		// The scheme is case-insensitive.
		e.do(t, req{Method: "GET", Path: "/api/v1", Header: map[string]string{"Authorization": "bearer " + e.admin}}).want(http.StatusOK)
	})
}

func TestUnroutedAsProblems(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.call(t, "GET", "/api/v1/nope", nil).problem(problem.NotFound)
		e.call(t, "GET", "/api/v1/spaces/default/entities", nil).problem(problem.NotFound)

		r := e.call(t, "POST", "/api/v1/spaces/default", nil).want(http.StatusMethodNotAllowed)
		var body struct {
			Error problem.Error `json:"error"`
		}
		r.decode(&body)
		if body.Error.Code != codeMethodNotAllowed || body.Error.Message == "" {
			t.Errorf("405 body = %s", r.body)
		}
		if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "PUT") {
			t.Errorf("Allow = %q", allow)
		}
		e.call(t, "PATCH", "/api/v1/tokens", nil).want(http.StatusMethodNotAllowed)
	})
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		r := e.do(t, req{Method: "GET", Path: "/healthz", Header: map[string]string{"X-Request-Id": "abc-123"}})
		if got := r.header.Get("X-Request-Id"); got != "abc-123" {
			t.Errorf("echoed request id = %q", got)
		}
		r = e.do(t, req{Method: "GET", Path: "/healthz"})
		if got := r.header.Get("X-Request-Id"); len(got) != 24 {
			t.Errorf("generated request id = %q", got)
		}
		r = e.do(t, req{Method: "GET", Path: "/healthz", Header: map[string]string{"X-Request-Id": strings.Repeat("x", 200)}})
		if got := r.header.Get("X-Request-Id"); len(got) != 24 {
			t.Errorf("an overlong request id was kept: %q", got)
		}
	})
}

func TestPanicRecovery(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	s := newServer(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	h := s.withRequestID(s.withAccessLog(s.withRecovery(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom")
	}))))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"code":"internal"`) {
		t.Errorf("panic answered %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "boom") || !strings.Contains(logs.String(), "status=500") {
		t.Errorf("logs = %s", logs.String())
	}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, d, 64)
			big := `{"title": "` + strings.Repeat("x", 100) + `"}`
			e.call(t, "PUT", "/api/v1/spaces/default/entities/task/t1", big).problem(problem.PayloadTooLarge)
			// Without a Content-Length the limit still holds while reading.
			r := e.do(t, req{Method: "POST", Path: "/api/v1/spaces/default/mutations", Token: e.admin,
				Body: io.MultiReader(strings.NewReader(`{"mutations": [`), strings.NewReader(strings.Repeat(" ", 100)+`]}`))})
			r.problem(problem.PayloadTooLarge)
			if h := e.head(t, "default"); h != 0 {
				t.Errorf("head = %d after refused writes", h)
			}
		})
	}
}

func TestPrincipalWithoutAuth(t *testing.T) {
	t.Parallel()
	// Behind withAuth a principal is always set; without one, nothing is
	// allowed.
	p := principal(httptest.NewRequest(http.MethodGet, "/", nil))
	if p.CanWrite() || p.IsAdmin() || p.Has(auth.ScopeLogRead) || p.CanAccessSpace("default") {
		t.Errorf("principal without authentication has rights: %+v", p)
	}
}
