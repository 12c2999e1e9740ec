package server

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/telemetry"
	"github.com/eddy-run/eddy/watch"
)

// newMetricsEnv is newEnv on SQLite with telemetry wired to the log, the
// hub and the server.
func newMetricsEnv(t *testing.T) *env {
	t.Helper()
	st := drivers[0].open(t)
	var hub *watch.Hub
	tel, err := telemetry.New(telemetry.Options{Watchers: func() int { return hub.Watchers() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	lg := changelog.New(st, changelog.Options{
		OnCommit: func(space string, head int64) { hub.Notify(space, head) },
		Observe:  tel.ObserveGroup,
	})
	t.Cleanup(func() { _ = lg.Close() })
	if _, err := lg.EnsureSpace(context.Background(), "default"); err != nil {
		t.Fatalf("ensure space: %v", err)
	}
	as := auth.NewService(st)
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	hub = watch.New(lg, watch.Options{Logger: logger, Heartbeat: testHeartbeat})
	srv := httptest.NewServer(newServer(t, Config{Log: lg, Auth: as, Hub: hub, Logger: logger, Metrics: tel}).Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() { stopHub(t, hub) })
	e := &env{t: t, srv: srv, log: lg, auth: as, hub: hub}
	e.admin = e.token(auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin, Actor: "owner"})
	return e
}

// scrape GETs /metrics without a token and returns each sample's value by
// series (`name{labels}`).
func (e *env) scrape(t *testing.T) map[string]string {
	t.Helper()
	r := e.do(t, req{Method: "GET", Path: "/metrics"})
	if r.status != 200 {
		t.Fatalf("GET /metrics: status %d: %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type = %q, want text/plain", ct)
	}
	out := make(map[string]string)
	for line := range strings.Lines(string(r.body)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		out[line[:i]] = line[i+1:]
	}
	return out
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newMetricsEnv(t)
	e.do(t, req{Method: "GET", Path: "/healthz"}).want(200)
	e.do(t, req{Method: "GET", Path: "/api/v1"}).want(401)
	e.call(t, "GET", "/nowhere", nil).want(404)
	e.call(t, "PUT", "/api/v1/spaces/default/entities/task/t1", map[string]any{"n": 1}).want(201)
	e.call(t, "PUT", "/api/v1/spaces/default/entities/task/t1", map[string]any{"n": 2}).want(200)

	got := e.scrape(t)
	tests := []struct{ series, want string }{
		{`eddy_http_requests_total{method="GET",route="/healthz",status="200"}`, "1"},
		{`eddy_http_requests_total{method="GET",route="/api/v1",status="401"}`, "1"},
		{`eddy_http_requests_total{method="GET",route="unmatched",status="404"}`, "1"},
		{`eddy_http_requests_total{method="PUT",route="/api/v1/spaces/{space}/entities/{type}/{id}",status="201"}`, "1"},
		{`eddy_http_requests_total{method="PUT",route="/api/v1/spaces/{space}/entities/{type}/{id}",status="200"}`, "1"},
		{`eddy_http_request_duration_seconds_count{method="PUT",route="/api/v1/spaces/{space}/entities/{type}/{id}"}`, "2"},
		{`eddy_commits_total`, "2"},
		{`eddy_commit_groups_total{outcome="committed"}`, "2"},
		{`eddy_commit_duration_seconds_count`, "2"},
		{`eddy_write_rejections_total`, "0"},
		{`eddy_watchers`, "0"},
	}
	for _, tt := range tests {
		if v := got[tt.series]; v != tt.want {
			t.Errorf("%s = %q, want %q", tt.series, v, tt.want)
		}
	}
	for series := range got {
		if strings.Contains(series, "t1") || strings.Contains(series, "nowhere") {
			t.Errorf("raw path in a label: %s", series)
		}
	}
	// The first scrape is counted by the second.
	if v := e.scrape(t)[`eddy_http_requests_total{method="GET",route="/metrics",status="200"}`]; v != "1" {
		t.Errorf("scrapes counted = %q, want 1", v)
	}
}

// TestMetricsUnconfigured checks that without Config.Metrics, /metrics
// is an ordinary authenticated path that does not exist.
func TestMetricsUnconfigured(t *testing.T) {
	t.Parallel()
	e := newEnv(t, drivers[0], 0)
	e.do(t, req{Method: "GET", Path: "/metrics"}).problem("unauthorized")
	e.call(t, "GET", "/metrics", nil).problem("not_found")
}
