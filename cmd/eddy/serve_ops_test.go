package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// startServeUntil runs eddy serve with getenv until its stderr shows
// marker, and returns the URL on that line, its stderr and a stop
// function returning the exit code.
func startServeUntil(t *testing.T, getenv func(string) string, marker string, args ...string) (string, *lineWaiter, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &lineWaiter{marker: marker, found: make(chan string, 1)}
	a := &app{stdout: io.Discard, stderr: stderr, stdin: strings.NewReader(""), getenv: getenv}
	codes := make(chan int, 1)
	go func() {
		codes <- a.run(ctx, append([]string{"serve", "--data", filepath.Join(t.TempDir(), "data"), "--addr", "127.0.0.1:0"}, args...))
	}()
	var base string
	select {
	case line := <-stderr.found:
		base = listenURL.FindString(line)
	case code := <-codes:
		cancel()
		t.Fatalf("serve exited %d before %q: %s", code, marker, stderr.String())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("serve never logged %q: %s", marker, stderr.String())
	}
	stop := func() int {
		cancel()
		select {
		case code := <-codes:
			return code
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop")
			return -1
		}
	}
	t.Cleanup(func() { cancel() })
	return base, stderr, stop
}

func noEnv(string) string { return "" }

// get sends a GET with an optional bearer token and returns status and body.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestServeReadyzWhileMigrating(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Hold the migration lock: serve's Migrate waits on it.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(0x65646479_6d696772)); err != nil {
		t.Fatal(err)
	}
	base, stderr, stop := startServeUntil(t, noEnv, "starting:", "--database", dsn)
	if code, body := get(t, base+"/healthz", ""); code != 200 {
		t.Fatalf("healthz while migrating = %d %s", code, body)
	}
	code, body := get(t, base+"/readyz", "")
	if code != 503 || !strings.Contains(body, `"code":"unavailable"`) || !strings.Contains(body, "migrations are running") {
		t.Fatalf("readyz while migrating = %d %s", code, body)
	}
	if code, body := get(t, base+"/api/v1", "x"); code != 503 {
		t.Fatalf("API while migrating = %d %s", code, body)
	}
	stderr.mu.Lock()
	stderr.marker, stderr.done = "listening on", false
	stderr.mu.Unlock()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stderr.found:
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not become ready: %s", stderr.String())
	}
	if code, body := get(t, base+"/readyz", ""); code != 200 {
		t.Fatalf("readyz after migrations = %d %s", code, body)
	}
	http.DefaultClient.CloseIdleConnections()
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit %d", code)
	}
}

func TestServeLogFormatJSON(t *testing.T) {
	t.Parallel()
	base, stderr, stop := startServeUntil(t, noEnv, "listening on", "--log-format", "json", "--log-level", "debug")
	get(t, base+"/healthz", "")
	http.DefaultClient.CloseIdleConnections()
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit %d: %s", code, stderr.String())
	}
	var levels = map[string]bool{}
	var sawRequest bool
	for line := range strings.Lines(strings.TrimSpace(stderr.String())) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		levels[rec["level"].(string)] = true
		if rec["msg"] == "http request" && rec["path"] == "/healthz" {
			sawRequest = true
		}
	}
	if !sawRequest || !levels["DEBUG"] {
		t.Fatalf("want an http request line and DEBUG lines, got levels %v: %s", levels, stderr.String())
	}
}

func TestServeLogLevelWarn(t *testing.T) {
	t.Parallel()
	// At warn the "listening on" info line is not logged: wait for the
	// server through /healthz instead. The probes start before it is
	// ready, so the starting line is not there either.
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr strings.Builder
	out := &lineWaiter{marker: "admin token", found: make(chan string, 1)}
	a := &app{stdout: out, stderr: &stderr, stdin: strings.NewReader(""), getenv: noEnv}
	codes := make(chan int, 1)
	go func() {
		codes <- a.run(ctx, []string{"serve", "--data", dir, "--addr", "127.0.0.1:0", "--log-level", "warn"})
	}()
	select {
	case <-out.found:
	case code := <-codes:
		t.Fatalf("serve exited %d", code)
	case <-time.After(30 * time.Second):
		t.Fatal("serve printed no admin token")
	}
	cancel()
	if code := <-codes; code != exitOK {
		t.Fatalf("serve exit %d", code)
	}
	if strings.Contains(stderr.String(), "level=INFO") {
		t.Fatalf("info lines at --log-level warn: %s", stderr.String())
	}
}

func TestServeOpsFlagsInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-format", "xml"}, "--log-format must be text or json"},
		{[]string{"--log-level", "loud"}, "--log-level must be debug, info, warn or error"},
		{[]string{"--cors-origin", "https://app.example/path"}, "--cors-origin"},
		{[]string{"--cors-origin", "app.example"}, "--cors-origin"},
	} {
		var stderr strings.Builder
		a := &app{stdout: io.Discard, stderr: &stderr, stdin: strings.NewReader(""), getenv: noEnv}
		code := a.run(context.Background(), append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, tc.args...))
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

func TestServeCORSOrigin(t *testing.T) {
	t.Parallel()
	base, _, stop := startServeUntil(t, noEnv, "listening on", "--cors-origin", "https://app.example", "--cors-origin", "http://localhost:5173")
	for origin, want := range map[string]int{"https://app.example": 204, "http://localhost:5173": 204, "https://other.example": 401} {
		req, _ := http.NewRequest(http.MethodOptions, base+"/api/v1/spaces/default/entities/task/t1", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "PUT")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("preflight from %s = %d, want %d", origin, res.StatusCode, want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit %d", code)
	}
}

// TestServeOTLP runs serve with the standard OpenTelemetry environment
// pointing at an in-process OTLP/HTTP receiver and checks that request
// spans arrive. It sets process environment variables, so it is not
// parallel.
func TestServeOTLP(t *testing.T) {
	spans := make(chan string, 256)
	rcv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					spans <- s.GetName()
				}
			}
		}
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	srv := newTestHTTPServer(t, rcv)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	base, stderr, stop := startServeUntil(t, os.Getenv, "listening on")
	if !strings.Contains(stderr.String(), "traces=true") {
		t.Fatalf("serve does not say it exports traces: %s", stderr.String())
	}
	get(t, base+"/api/v1", "not-a-token")
	http.DefaultClient.CloseIdleConnections()
	// Stopping flushes the batched spans.
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit %d: %s", code, stderr.String())
	}
	close(spans)
	var names []string
	for n := range spans {
		names = append(names, n)
	}
	for _, n := range names {
		if n == "GET /api/v1" {
			return
		}
	}
	t.Fatalf("spans received = %v, want a GET /api/v1 server span", names)
}

// newTestHTTPServer serves h on loopback for the test and returns its URL.
func newTestHTTPServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
