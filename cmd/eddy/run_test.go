package main

import (
	"strings"
	"testing"

	"github.com/eddy-run/eddy/client"
)

func TestTriggersRun(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	doc := `functions:
  mark: {kind: expr, writes: [task], code: 'patch("task", entity.id, {"marked": true})'}
  quiet: {kind: expr, code: 'nil'}
triggers:
  mark:
    source: {changes: {types: [task]}}
    function: mark
  quiet:
    source: {changes: {}}
    function: quiet
`
	s.runWith(t, cliOptions{stdin: doc}, "apply", "-f", "-").ok(t)
	s.run(t, "put", "task", "a", `{"status": "done"}`).ok(t)

	r := s.run(t, "triggers", "run", "mark", "--entity", "task/a").ok(t)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "delivery run_") ||
		!strings.HasSuffix(lines[0], "(trigger mark, caused by seq 1, depth 1)") || strings.TrimSpace(lines[1]) != "0: applied seq 2" {
		t.Fatalf("run:\n%s", r.stdout)
	}
	got := decodeOne[client.RunResult](t, s.run(t, "triggers", "run", "quiet", "--entity", "task/a", "--json").ok(t).stdout)
	if got.Trigger != "quiet" || got.Seq != 2 || got.Depth != 2 || len(got.Receipts) != 0 || !strings.HasPrefix(got.Delivery, "run_") {
		t.Fatalf("quiet = %+v", got)
	}
	if out := s.run(t, "triggers", "run", "quiet", "--entity", "task/a").ok(t).stdout; !strings.Contains(out, "no actions") {
		t.Fatalf("quiet:\n%s", out)
	}

	s.run(t, "triggers", "run", "mark").fails(t, exitUsage, "--entity TYPE/ID is required")
	s.run(t, "triggers", "run", "mark", "--entity", "task").fails(t, exitUsage, "--entity TYPE/ID is required")
	s.run(t, "triggers", "run", "mark", "--entity", "task/zz").fails(t, exitError, "error: not_found: ")
	s.run(t, "triggers", "run", "missing", "--entity", "task/a").fails(t, exitError, "error: not_found: ")
}
