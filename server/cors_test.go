package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/watch"
)

// newEnvConfig is newEnv on SQLite with cfg's CORS origins and tracer
// provider.
func newEnvConfig(t *testing.T, cfg Config) *env {
	t.Helper()
	return newEnvWith(t, drivers[0], watch.Options{Heartbeat: testHeartbeat}, func(c *Config) {
		c.CORSOrigins, c.TracerProvider = cfg.CORSOrigins, cfg.TracerProvider
	})
}

func TestCORSPreflight(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, Config{CORSOrigins: []string{"https://app.example", "http://localhost:5173"}})
	path := "/api/v1/spaces/default/entities/task/t1"
	tests := []struct {
		name, origin string
		allowed      bool
	}{
		{"listed origin", "https://app.example", true},
		{"second listed origin", "http://localhost:5173", true},
		{"other origin", "https://evil.example", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A preflight carries no token.
			r := e.do(t, req{Method: "OPTIONS", Path: path, Header: map[string]string{
				"Origin": tc.origin, "Access-Control-Request-Method": "PUT",
				"Access-Control-Request-Headers": "authorization, content-type, if-match",
			}})
			if !tc.allowed {
				if got := r.header.Get("Access-Control-Allow-Origin"); got != "" {
					t.Fatalf("Allow-Origin = %q for an unlisted origin", got)
				}
				if r.status == 204 {
					t.Fatalf("preflight of an unlisted origin answered 204")
				}
				return
			}
			if r.status != 204 {
				t.Fatalf("preflight status = %d, want 204: %s", r.status, r.body)
			}
			for k, want := range map[string]string{
				"Access-Control-Allow-Origin":  tc.origin,
				"Access-Control-Allow-Methods": corsMethods,
				"Access-Control-Allow-Headers": corsAllowHeaders,
				"Access-Control-Max-Age":       "600",
			} {
				if got := r.header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestCORSActualRequest(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, Config{CORSOrigins: []string{"https://app.example"}})
	path := "/api/v1/spaces/default/entities/task/t1"
	r := e.do(t, req{Method: "PUT", Path: path, Token: e.admin, Body: map[string]any{"n": 1},
		Header: map[string]string{"Origin": "https://app.example"}}).want(201)
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "https://app.example" {
		t.Fatalf("Allow-Origin = %q", got)
	}
	if got := r.header.Get("Access-Control-Expose-Headers"); got != corsExposeHeaders {
		t.Fatalf("Expose-Headers = %q", got)
	}
	// CORS is no authentication: a cross-origin request without a token
	// is still unauthorized, and says so readably to the script.
	r = e.do(t, req{Method: "GET", Path: path, Header: map[string]string{"Origin": "https://app.example"}})
	r.problem("unauthorized")
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "https://app.example" {
		t.Fatalf("Allow-Origin on 401 = %q", got)
	}
	// An OPTIONS without Access-Control-Request-Method is no preflight.
	e.do(t, req{Method: "OPTIONS", Path: path, Header: map[string]string{"Origin": "https://app.example"}}).problem("unauthorized")
}

func TestCORSOff(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, Config{})
	r := e.do(t, req{Method: "OPTIONS", Path: "/api/v1", Header: map[string]string{
		"Origin": "https://app.example", "Access-Control-Request-Method": "GET"}})
	r.problem("unauthorized")
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Fatalf("Allow-Origin = %q with CORS off", got)
	}
}

func TestCORSAnyOrigin(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, Config{CORSOrigins: []string{"*"}})
	r := e.do(t, req{Method: "OPTIONS", Path: "/api/v1", Header: map[string]string{
		"Origin": "https://anything.example", "Access-Control-Request-Method": "GET"}})
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "https://anything.example" {
		t.Fatalf("preflight = %d, Allow-Origin %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
	}
}

// TestCORSAllowsTheAPIRequestHeaders: a preflight allows every request
// header the API reads, Eddy-Cause (a delivery's writes) included.
func TestCORSAllowsTheAPIRequestHeaders(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{}
	for _, h := range strings.Split(corsAllowHeaders, ",") {
		allowed[http.CanonicalHeaderKey(strings.TrimSpace(h))] = true
	}
	for _, h := range []string{"Authorization", "Content-Type", "If-Match", "Idempotency-Key", "X-Request-Id", "Traceparent", causeHeader} {
		if !allowed[http.CanonicalHeaderKey(h)] {
			t.Errorf("Access-Control-Allow-Headers lacks %s: %s", h, corsAllowHeaders)
		}
	}
}
