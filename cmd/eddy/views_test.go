package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/internal/polltest"
)

// newViewsTestServer is newTestServer with the watch hub and the views
// service wired, so live view streams work.
func newViewsTestServer(t *testing.T) (*testServer, *eddy.Eddy) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := eddy.Open(ctx, eddy.Config{DataDir: dir, NoEngine: true, Logger: quiet})
	if err != nil {
		t.Fatalf("open eddy: %v", err)
	}
	secret, _, err := auth.BootstrapAdmin(ctx, e.Auth(), filepath.Join(dir, tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg := serverConfig(e)
	cfg.Hub, cfg.Logger = e.Hub(), quiet
	hs := serveAPI(t, cfg)
	t.Cleanup(func() {
		if err := e.Close(); err != nil { // ends the streams first
			t.Errorf("close eddy: %v", err)
		}
		hs.Close()
	})
	return &testServer{url: hs.URL, dir: dir, admin: secret}, e
}

// lastCursor returns the value of the last "cursor: " line.
func lastCursor(t *testing.T, out string) string {
	t.Helper()
	i := strings.LastIndex(out, "cursor: ")
	if i < 0 {
		t.Fatalf("no cursor in %q", out)
	}
	return strings.TrimSpace(out[i+len("cursor: "):])
}

func TestViewsCLI(t *testing.T) {
	t.Parallel()
	s, _ := newViewsTestServer(t)
	doc := `views:
  alpha:
    version: v1
    types: [task]
    filter: {fieldEquals: {field: project, expected: alpha}}
`
	if r := s.runWith(t, cliOptions{stdin: doc}, "apply", "-f", "-").ok(t); r.stdout != "view alpha created\n" {
		t.Fatalf("apply: %q", r.stdout)
	}
	for _, id := range []string{"a", "b", "c"} {
		s.run(t, "put", "task", id, `{"project": "alpha"}`).ok(t)
	}
	s.run(t, "put", "task", "z", `{"project": "beta"}`).ok(t)
	if r := s.run(t, "views", "list").ok(t); !strings.Contains(r.stdout, "alpha  v1       task   -       fieldEquals {\"field\":\"project\",\"expected\":\"alpha\"}") {
		t.Fatalf("list:\n%s", r.stdout)
	}
	r := s.run(t, "views", "bootstrap", "alpha", "--page-size", "2").ok(t)
	if !strings.Contains(r.stdout, "task\ta\t1\t{\"project\":\"alpha\"}\n") || strings.Count(r.stdout, "\n") != 4 {
		t.Fatalf("bootstrap:\n%s", r.stdout)
	}
	if r.stderr != "page 1: 2 records (2 so far)\npage 2: 1 records (3 so far)\n" {
		t.Fatalf("progress %q", r.stderr)
	}
	cursor := lastCursor(t, r.stdout)
	s.run(t, "patch", "task", "a", `{"project": "beta"}`).ok(t)
	s.run(t, "delete", "task", "b").ok(t)
	r = s.run(t, "views", "delta", "alpha", "--cursor", cursor, "--budget", "1", "--all").ok(t)
	if !strings.Contains(r.stdout, "5\tremoved_from_scope\ttask/a@5\n6\tdeleted\ttask/b@6\n") {
		t.Fatalf("delta:\n%s", r.stdout)
	}
	if r.stderr != "page 1 read; more follow\n" {
		t.Fatalf("delta progress %q", r.stderr)
	}
	js := s.run(t, "views", "delta", "alpha", "--cursor", cursor, "--json").ok(t).stdout
	if !strings.HasPrefix(js, `{"context":{`) || strings.Count(js, "\n") != 1 {
		t.Fatalf("delta --json:\n%s", js)
	}
	r = s.run(t, "views", "backtest", "alpha", "--chunk", "2").ok(t)
	if !strings.Contains(r.stdout, "size 0 at 0, 1 at 6") || !strings.Contains(r.stdout, "entered 3, left 1, updated 0, deleted 1") ||
		!strings.Contains(r.stdout, "entered: task/a@1 task/b@2 task/c@3") {
		t.Fatalf("backtest:\n%s", r.stdout)
	}
	if r.stderr != "judged 2/6\njudged 4/6\njudged 6/6\n" {
		t.Fatalf("backtest progress %q", r.stderr)
	}
	s.run(t, "views", "rotate-epoch").ok(t)
	s.run(t, "views", "delta", "alpha", "--cursor", cursor).fails(t, exitError, "epoch_changed")
	s.run(t, "views", "bootstrap", "nope").fails(t, exitError, "not_found")
	s.run(t, "views", "delta", "alpha").fails(t, exitUsage, "missing --cursor")
	s.run(t, "views", "delete", "alpha").ok(t)
	s.run(t, "views", "get", "alpha").fails(t, exitError, "not_found")
}

// TestViewsWatchCLI: eddy views watch follows the stream and ends with
// exit 1 and a hint when the view changes under it.
func TestViewsWatchCLI(t *testing.T) {
	t.Parallel()
	s, e := newViewsTestServer(t)
	s.runWith(t, cliOptions{stdin: `views: {alpha: {version: v1, types: [task], filter: {cel: "true"}}}`}, "apply", "-f", "-").ok(t)
	cursor := lastCursor(t, s.run(t, "views", "bootstrap", "alpha").ok(t).stdout)
	done := make(chan result, 1)
	go func() { done <- s.run(t, "views", "watch", "alpha", "--cursor", cursor) }()
	polltest.Until(t, "the watch to open", func() bool { return e.Hub().Watchers() > 0 })
	s.run(t, "put", "task", "t1", `{"n": 1}`).ok(t)
	s.runWith(t, cliOptions{stdin: `views: {alpha: {version: v2, types: [task], filter: {cel: "true"}}}`}, "apply", "-f", "-").ok(t)
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the watch did not end")
	}
	if r.code != exitError || !strings.Contains(r.stderr, "view_changed") || !strings.Contains(r.stderr, "eddy views bootstrap") {
		t.Fatalf("watch: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if r.stdout != "" && !strings.Contains(r.stdout, "upsert\ttask/t1@1") {
		t.Fatalf("watch printed %q", r.stdout)
	}
}

// TestViewsBootstrapDeltaOutput: -o and --jq show a whole bootstrap as
// {"records", "cursor"} and delta pages as {"commits", "cursor"}, so a
// script can take the cursor without parsing text.
func TestViewsBootstrapDeltaOutput(t *testing.T) {
	t.Parallel()
	s, _ := newViewsTestServer(t)
	doc := "views:\n  open:\n    version: v1\n    types: [task]\n    filter: {fieldEquals: {field: status, expected: open}}\n"
	s.runWith(t, cliOptions{stdin: doc}, "apply", "-f", "-").ok(t)
	s.run(t, "put", "task", "t1", `{"status": "open"}`).ok(t)
	s.run(t, "put", "task", "t2", `{"status": "open"}`).ok(t)

	if out := s.run(t, "views", "bootstrap", "open", "--page-size", "1", "-o", "name").ok(t).stdout; out != "entity/task/t1\nentity/task/t2\n" {
		t.Fatalf("bootstrap -o name = %q", out)
	}
	boot := decodeOne[struct {
		Records []record `json:"records"`
		Cursor  string   `json:"cursor"`
	}](t, s.run(t, "views", "bootstrap", "open", "-o", "json").ok(t).stdout)
	if len(boot.Records) != 2 || boot.Cursor == "" {
		t.Fatalf("bootstrap -o json = %+v", boot)
	}
	cursor := strings.TrimSpace(s.run(t, "views", "bootstrap", "open", "--jq", ".cursor").ok(t).stdout)
	if cursor != boot.Cursor {
		t.Fatalf("bootstrap --jq .cursor = %q, -o json's %q", cursor, boot.Cursor)
	}

	s.run(t, "patch", "task", "t2", `{"status": "done"}`).ok(t)
	if out := s.run(t, "views", "delta", "open", "--cursor", cursor, "--jq", ".commits[].changes[] | .kind + \" \" + .id").ok(t).stdout; out != "removed_from_scope t2\n" {
		t.Fatalf("delta --jq = %q", out)
	}
	next := strings.TrimSpace(s.run(t, "views", "delta", "open", "--cursor", cursor, "--jq", ".cursor").ok(t).stdout)
	if next == "" || next == cursor {
		t.Fatalf("delta --jq .cursor = %q (from %q)", next, cursor)
	}
	head, rows := tableOf(t, s.run(t, "views", "delta", "open", "--cursor", cursor, "-o", "wide").ok(t).stdout)
	if strings.Join(head, ",") != "SEQ,KIND,ENTITY@VERSION,PROPERTIES" || len(rows) != 1 || rows[0][1] != "removed_from_scope" {
		t.Fatalf("delta -o wide = %q %q", head, rows)
	}
	// Without -o, the text stays as it was: a line per change, then the cursor.
	if out := s.run(t, "views", "delta", "open", "--cursor", cursor).ok(t).stdout; lastCursor(t, out) != next {
		t.Fatalf("delta text:\n%s", out)
	}
}
