package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/telemetry"
)

// scrape GETs h and returns each sample's value by series
// (`name{labels}`).
func scrape(t *testing.T, h http.Handler) map[string]string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("scrape: Content-Type %q", ct)
	}
	out := make(map[string]string)
	for line := range strings.Lines(rec.Body.String()) {
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
	var watchers atomic.Int64
	tel, err := telemetry.New(telemetry.Options{Watchers: func() int { return int(watchers.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())

	fresh := scrape(t, tel.Handler())
	tel.ObserveGroup(changelog.GroupStats{Space: "s", Requests: 2, Commits: 3, Rejections: 1, Duration: 3 * time.Millisecond})
	tel.ObserveGroup(changelog.GroupStats{Space: "s", Requests: 1, Commits: 1, Duration: 20 * time.Millisecond})
	tel.ObserveGroup(changelog.GroupStats{Space: "s", Requests: 1, Err: errors.New("disk full")})
	watchers.Store(4)
	tel.ObserveHTTP("GET", "/healthz", 200, 2*time.Millisecond)
	tel.ObserveHTTP("GET", "/healthz", 200, time.Millisecond)
	tel.ObserveHTTP("PUT", "/api/v1/spaces/{space}/entities/{type}/{id}", 409, time.Millisecond)
	tel.ObserveHTTP("BREW", "", 404, time.Millisecond)
	got := scrape(t, tel.Handler())

	tests := []struct {
		series string
		before string // "" = absent before any recording
		after  string
	}{
		{`eddy_commits_total`, "0", "4"},
		{`eddy_commit_groups_total{outcome="committed"}`, "0", "2"},
		{`eddy_commit_groups_total{outcome="failed"}`, "0", "1"},
		{`eddy_write_rejections_total`, "0", "1"},
		{`eddy_commit_duration_seconds_count`, "", "2"},
		{`eddy_commit_duration_seconds_sum`, "", "0.023"},
		{`eddy_commit_duration_seconds_bucket{le="0.005"}`, "", "1"},
		{`eddy_commit_duration_seconds_bucket{le="+Inf"}`, "", "2"},
		{`eddy_watchers`, "0", "4"},
		{`eddy_http_requests_total{method="GET",route="/healthz",status="200"}`, "", "2"},
		{`eddy_http_requests_total{method="PUT",route="/api/v1/spaces/{space}/entities/{type}/{id}",status="409"}`, "", "1"},
		{`eddy_http_requests_total{method="OTHER",route="unmatched",status="404"}`, "", "1"},
		{`eddy_http_request_duration_seconds_count{method="GET",route="/healthz"}`, "", "2"},
		{`eddy_http_request_duration_seconds_bucket{method="GET",route="/healthz",le="0.001"}`, "", "1"},
	}
	for _, tt := range tests {
		if v, ok := fresh[tt.series]; v != tt.before || (tt.before == "" && ok) {
			t.Errorf("before: %s = %q, want %q", tt.series, v, tt.before)
		}
		if v := got[tt.series]; v != tt.after {
			t.Errorf("after: %s = %q, want %q", tt.series, v, tt.after)
		}
	}
	for series := range got {
		if strings.Contains(series, `"s"`) || strings.Contains(series, "otel_scope") {
			t.Errorf("unexpected label in %s", series)
		}
	}
	if _, ok := got["go_goroutines"]; !ok {
		t.Error("go_goroutines missing: the Go collector is not registered")
	}
}

// TestSeparateRegistries checks that two Telemetry values do not share
// series.
func TestSeparateRegistries(t *testing.T) {
	a, err := telemetry.New(telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := telemetry.New(telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a.ObserveGroup(changelog.GroupStats{Commits: 5})
	if v := scrape(t, a.Handler())["eddy_commits_total"]; v != "5" {
		t.Errorf("a: eddy_commits_total = %q, want 5", v)
	}
	if v := scrape(t, b.Handler())["eddy_commits_total"]; v != "0" {
		t.Errorf("b: eddy_commits_total = %q, want 0", v)
	}
	if _, ok := scrape(t, b.Handler())["eddy_watchers"]; ok {
		t.Error("eddy_watchers exported without a Watchers func")
	}
}
