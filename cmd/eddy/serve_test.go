package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// lineWaiter is a writer that reports the first line containing a marker.
type lineWaiter struct {
	mu     sync.Mutex
	buf    strings.Builder
	marker string
	found  chan string
	done   bool
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.done || w.marker == "" {
		return len(p), nil
	}
	for _, line := range strings.Split(w.buf.String(), "\n") {
		if strings.Contains(line, w.marker) {
			w.done = true
			w.found <- line
			break
		}
	}
	return len(p), nil
}

func (w *lineWaiter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// listenURL finds the URL in serve's "listening on" log line.
var listenURL = regexp.MustCompile(`http://[^\s"]+`)

// startServe runs eddy serve on a free port and returns its base URL, its
// stdout and a stop function that returns the exit code.
func startServe(t *testing.T, dir string, extra ...string) (base string, stdout *lineWaiter, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout = &lineWaiter{}
	stderr := &lineWaiter{marker: "listening on", found: make(chan string, 1)}
	a := &app{stdout: stdout, stderr: stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	codes := make(chan int, 1)
	go func() {
		codes <- a.run(ctx, append([]string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}, extra...))
	}()

	select {
	case line := <-stderr.found:
		base = listenURL.FindString(line)
	case code := <-codes:
		cancel()
		t.Fatalf("serve exited %d before listening: %s", code, stderr.String())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("serve did not listen: %s", stderr.String())
	}
	return base, stdout, func() int {
		cancel()
		select {
		case code := <-codes:
			return code
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop")
			return -1
		}
	}
}

func TestServe(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")

	base, stdout, stop := startServe(t, dir)
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz status %d", resp.StatusCode)
	}

	tokenPath := filepath.Join(dir, tokenFile)
	saved, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatalf("admin token file: %v", err)
	}
	secret := strings.TrimSpace(string(saved))
	if !strings.Contains(stdout.String(), "admin token: "+secret) || !strings.Contains(stdout.String(), tokenPath) {
		t.Fatalf("serve printed %q, want the token %q and its path", stdout.String(), secret)
	}
	if fi, err := os.Stat(tokenPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v", fi, err)
	}

	// The CLI finds the token through --data.
	var out strings.Builder
	cli := &app{stdout: &out, stderr: io.Discard, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	if code := cli.run(context.Background(), []string{"--server", base, "--data", dir, "put", "task", "t1", `{"a": 1}`}); code != exitOK {
		t.Fatalf("put against serve: exit %d", code)
	}
	http.DefaultClient.CloseIdleConnections()
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit %d", code)
	}

	// A second start keeps the data and the token, and prints no new token.
	base, stdout, stop = startServe(t, dir)
	out.Reset()
	if code := cli.run(context.Background(), []string{"--server", base, "--data", dir, "get", "task", "t1"}); code != exitOK {
		t.Fatalf("get after restart: exit %d", code)
	}
	if !strings.Contains(out.String(), `"a": 1`) {
		t.Fatalf("entity after restart: %s", out.String())
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit %d", code)
	}
	if strings.Contains(stdout.String(), "admin token:") {
		t.Fatalf("second start printed a token: %q", stdout.String())
	}
}

func TestServePostgres(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, _, stop := startServe(t, dir, "--database", pgtest.NewDatabase(t))

	var out, errb strings.Builder
	cli := &app{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	for _, args := range [][]string{
		{"put", "task", "t1", `{"a": 1}`},
		{"patch", "task", "t1", `{"b": 2}`},
		{"get", "task", "t1"},
	} {
		out.Reset()
		if code := cli.run(context.Background(), append([]string{"--server", base, "--data", dir}, args...)); code != exitOK {
			t.Fatalf("%v against serve on PostgreSQL: exit %d", args, code)
		}
	}
	got := decodeOne[record](t, out.String())
	if got.Version != 2 || got.Properties["a"] != 1.0 || got.Properties["b"] != 2.0 {
		t.Fatalf("entity = %+v", got)
	}

	// A reader token with log:read pulls the raw log: the scope survives
	// the PostgreSQL round trip.
	out.Reset()
	if code := cli.run(context.Background(), []string{"--server", base, "--data", dir, "tokens", "create", "--role", "reader", "--scopes", "log:read"}); code != exitOK {
		t.Fatalf("tokens create: exit %d", code)
	}
	_, secret := tokenFields(t, out.String())
	out.Reset()
	if code := cli.run(context.Background(), []string{"--server", base, "--token", secret, "log"}); code != exitOK {
		t.Fatalf("log with a log:read reader token: exit %d: %s", code, errb.String())
	}
	if p := decodeOne[pullAnswer](t, out.String()); len(p.Commits) != 2 {
		t.Fatalf("pulled %d commits, want 2", len(p.Commits))
	}
	if code := stop(); code != exitOK {
		t.Fatalf("serve exit %d", code)
	}
}

func TestServeBadDatabase(t *testing.T) {
	t.Parallel()
	var stderr strings.Builder
	a := &app{stdout: io.Discard, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	code := a.run(context.Background(), []string{"serve", "--data", t.TempDir(), "--database", "mysql://x", "--addr", "127.0.0.1:0"})
	if code != exitError || !strings.Contains(stderr.String(), "unsupported database URL") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}

	// EDDY_DATABASE_URL is the default of --database.
	stderr.Reset()
	a.getenv = func(k string) string { return map[string]string{"EDDY_DATABASE_URL": "mysql://y"}[k] }
	code = a.run(context.Background(), []string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"})
	if code != exitError || !strings.Contains(stderr.String(), "mysql") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
