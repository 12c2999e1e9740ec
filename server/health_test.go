package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReadyzStoreUnreachable(t *testing.T) {
	t.Parallel()
	e := newEnvConfig(t, Config{})
	e.do(t, req{Method: "GET", Path: "/readyz"}).want(200)
	if err := e.log.Store().Close(); err != nil {
		t.Fatal(err)
	}
	p := e.do(t, req{Method: "GET", Path: "/readyz"}).problem("unavailable")
	if p.Message != "store unavailable" {
		t.Fatalf("message = %q", p.Message)
	}
	// Liveness does not depend on the store.
	e.do(t, req{Method: "GET", Path: "/healthz"}).want(200)
}

func TestStarting(t *testing.T) {
	t.Parallel()
	h := Starting(slog.New(slog.DiscardHandler), "migrations are running")
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/healthz", 200},
		{"GET", "/readyz", 503},
		{"GET", "/api/v1", 503},
		{"PUT", "/api/v1/spaces/default/entities/task/t1", 503},
		{"POST", "/healthz", 503},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.status {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, rec.Code, tc.status)
		}
		if rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: Content-Type %q", tc.method, tc.path, rec.Header().Get("Content-Type"))
		}
		if tc.status == 503 {
			body := rec.Body.String()
			if !strings.Contains(body, `"code":"unavailable"`) || !strings.Contains(body, "not ready: migrations are running") {
				t.Errorf("%s %s: body %s", tc.method, tc.path, body)
			}
			if rec.Header().Get("Retry-After") != "1" {
				t.Errorf("%s %s: no Retry-After", tc.method, tc.path)
			}
		}
		r, _ := http.NewRequest(tc.method, "http://x"+tc.path, nil)
		checkResponse(t, r, rec.Code, rec.Header(), rec.Body.Bytes())
	}
}
