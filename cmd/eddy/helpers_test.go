package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/server"
)

func TestMain(m *testing.M) {
	if os.Getenv(asEddyEnv) == "1" {
		// TestDocs runs this binary as eddy (serve and the CLI).
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

// testServer is a real eddy served in-process on an httptest server, with
// its admin token in dir/admin.token.
type testServer struct {
	url   string
	dir   string
	admin string
}

// newTestServer opens eddy on SQLite in a temp dir and serves it,
// without the trigger engine: triggers are stored and judged by dry
// runs, backtests and manual runs, never delivered in the background
// (newServer(t, true) runs them).
func newTestServer(t *testing.T) *testServer {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	e, err := eddy.Open(ctx, eddy.Config{DataDir: dir, NoEngine: true})
	if err != nil {
		t.Fatalf("open eddy: %v", err)
	}
	secret, created, err := auth.BootstrapAdmin(ctx, e.Auth(), filepath.Join(dir, tokenFile))
	if err != nil || !created {
		t.Fatalf("bootstrap admin: created=%v err=%v", created, err)
	}
	hs := serveAPI(t, serverConfig(e))
	t.Cleanup(func() {
		hs.Close()
		if err := e.Close(); err != nil {
			t.Errorf("close eddy: %v", err)
		}
	})
	return &testServer{url: hs.URL, dir: dir, admin: secret}
}

// result is what one CLI run produced.
type result struct {
	code           int
	stdout, stderr string
}

// cliOptions vary one CLI run.
type cliOptions struct {
	env   map[string]string
	stdin string
}

// run runs the CLI against the server with its admin token (read from the
// data directory) and the given args.
func (s *testServer) run(t *testing.T, args ...string) result {
	t.Helper()
	return s.runWith(t, cliOptions{}, args...)
}

// runWith is run with an environment and standard input.
func (s *testServer) runWith(t *testing.T, o cliOptions, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	a := &app{
		stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(o.stdin),
		getenv: hermeticEnv(o.env),
	}
	full := append([]string{"--server", s.url, "--data", s.dir}, args...)
	code := a.run(context.Background(), full)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// ok fails the test unless the run exited 0.
func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return r
}

// fails checks the exit code and that stderr holds want.
func (r result) fails(t *testing.T, code int, want string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, want) {
		t.Fatalf("stderr %q does not contain %q", r.stderr, want)
	}
}

// decodeAll decodes a stream of JSON documents.
func decodeAll[T any](t *testing.T, s string) []T {
	t.Helper()
	var out []T
	dec := json.NewDecoder(strings.NewReader(s))
	for {
		var v T
		err := dec.Decode(&v)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("decode %q: %v", s, err)
		}
		out = append(out, v)
	}
}

// decodeOne decodes exactly one JSON document.
func decodeOne[T any](t *testing.T, s string) T {
	t.Helper()
	all := decodeAll[T](t, s)
	if len(all) != 1 {
		t.Fatalf("want one JSON document, got %d in %q", len(all), s)
	}
	return all[0]
}

// tableRows returns the data lines of a table (without its header).
func tableRows(out string) []string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) <= 1 {
		return nil
	}
	return lines[1:]
}

// hermeticEnv is an environment of env alone, with EDDY_CONFIG pointing
// at a file that does not exist unless env names one: no test reads the
// user's own contexts.
func hermeticEnv(env map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := env[k]; ok || k != "EDDY_CONFIG" {
			return v
		}
		return filepath.Join(os.TempDir(), "eddy-test-no-config", "config.yaml")
	}
}

// serverConfig is e's server configuration without the optional parts
// (hub, engine, metrics), which a test adds when it needs them.
func serverConfig(e *eddy.Eddy) server.Config {
	cfg := e.ServerConfig()
	cfg.Hub, cfg.Engine, cfg.Metrics, cfg.Logger, cfg.Version = nil, nil, nil, nil, "test"
	return cfg
}

// serveAPI serves cfg's API on an httptest server (the caller closes it).
func serveAPI(t *testing.T, cfg server.Config) *httptest.Server {
	t.Helper()
	s, err := server.New(cfg)
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	return httptest.NewServer(s.Handler())
}
