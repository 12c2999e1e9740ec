package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/internal/eddytest"
	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/journal"
)

// newJournalTestServer is newTestServer with the journal wired and a
// short safe window.
func newJournalTestServer(t *testing.T) *testServer {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := eddy.Open(ctx, eddy.Config{DataDir: dir, NoEngine: true, Logger: quiet, JournalSafeWindow: 10 * time.Millisecond})
	if err != nil {
		t.Fatalf("open eddy: %v", err)
	}
	secret, _, err := auth.BootstrapAdmin(ctx, e.Auth(), filepath.Join(dir, tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg := serverConfig(e)
	cfg.Logger = quiet
	hs := serveAPI(t, cfg)
	t.Cleanup(func() {
		hs.Close()
		if err := e.Close(); err != nil {
			t.Errorf("close eddy: %v", err)
		}
	})
	return &testServer{url: hs.URL, dir: dir, admin: secret}
}

// untilContains runs the CLI until its stdout holds want (commits settle
// after the safe window), failing after a bound.
func untilContains(t *testing.T, s *testServer, o cliOptions, want string, args ...string) string {
	t.Helper()
	var out string
	polltest.Within(t, 20*time.Second, fmt.Sprintf("%v to show %q", args, want), func() bool {
		out = s.runWith(t, o, args...).ok(t).stdout
		return strings.Contains(out, want)
	})
	return out
}

func TestJournalCLI(t *testing.T) {
	t.Parallel()
	s := newJournalTestServer(t)
	_, secret := tokenFields(t, s.run(t, "tokens", "create", "--role", "reader", "--user", "u1", "--application", "cli").ok(t).stdout)
	u1 := cliOptions{env: map[string]string{"EDDY_TOKEN": secret}}
	// A session opened before the write: its cursor (a safe window back
	// from its creation) is behind n1, whenever the read runs.
	before := decodeOne[journal.Session](t, s.runWith(t, u1, "journal", "session").ok(t).stdout)
	s.run(t, "put", "note", "n1", `{"t":"hello"}`).ok(t)

	if out := s.runWith(t, u1, "journal", "capabilities").ok(t).stdout; !strings.Contains(out, `"pageLimit": 500`) {
		t.Fatalf("capabilities: %s", out)
	}
	ses := decodeOne[journal.Session](t, s.runWith(t, u1, "journal", "session").ok(t).stdout)
	out := untilContains(t, s, u1, `1 object note/n1 {"t":"hello"}`, "journal", "read", "--cursor", before.Cursor)
	cur := lastCursor(t, out)
	s.run(t, "delete", "note", "n1").ok(t)
	untilContains(t, s, u1, "2 tombstone note/n1 deleted", "journal", "read", "--cursor", cur, "--limit", "10")
	if out := s.runWith(t, u1, "journal", "fetch", "--token", ses.FetchToken).ok(t).stdout; out != "" && !strings.Contains(out, "note/n1 1 ") {
		t.Fatalf("fetch: %q", out)
	}
	st := s.runWith(t, u1, "journal", "state", "note/n1", "note/zz").ok(t).stdout
	if rows := tableRows(st); len(rows) != 2 || !strings.Contains(rows[0], "gone") {
		t.Fatalf("state:\n%s", st)
	}
	s.runWith(t, u1, "journal", "read", "--cursor", cur+"x").fails(t, exitError, "cursor_invalid")
	s.runWith(t, u1, "journal", "state", "n1").fails(t, exitUsage, "want TYPE/ID")
	s.runWith(t, u1, "journal", "fetch").fails(t, exitUsage, "--token is required")
	s.run(t, "journal", "session").fails(t, exitError, "forbidden")
}

// TestJournalFollow: read --follow polls until interrupted, hands later
// commits, and prints the cursor to resume from.
func TestJournalFollow(t *testing.T) {
	t.Parallel()
	s := newJournalTestServer(t)
	_, secret := tokenFields(t, s.run(t, "tokens", "create", "--role", "reader", "--user", "u1", "--application", "cli").ok(t).stdout)
	var stdout, stderr eddytest.Buffer
	a := &app{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(""),
		getenv: func(k string) string { return map[string]string{"EDDY_TOKEN": secret}[k] }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	// Follow from a session opened before the write, so the write is
	// after the cursor however late the follow starts.
	before := decodeOne[journal.Session](t, s.runWith(t, cliOptions{env: map[string]string{"EDDY_TOKEN": secret}}, "journal", "session").ok(t).stdout)
	go func() {
		done <- a.run(ctx, []string{"--server", s.url, "--data", s.dir, "journal", "read", "--follow", "--poll", "10ms", "--cursor", before.Cursor})
	}()
	s.run(t, "put", "note", "late", `{}`).ok(t)
	deadline := time.After(20 * time.Second)
	for !strings.Contains(stdout.String(), "object note/late") {
		select {
		case <-deadline:
			t.Fatalf("follow never showed the commit: %q %q", stdout.String(), stderr.String())
		case code := <-done:
			t.Fatalf("follow exited %d: %q", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("interrupted follow exited %d: %s", code, stderr.String())
	}
	if cur := lastCursor(t, stdout.String()); cur == "" {
		t.Fatal("no cursor to resume from")
	}
}
