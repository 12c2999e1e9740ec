package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestDeliveriesBulk(t *testing.T) {
	t.Parallel()
	s := newServer(t, true)
	s.runWith(t, cliOptions{stdin: engineDoc}, "apply", "-f", "-").ok(t)
	for i := range 2 {
		s.run(t, "put", "task", fmt.Sprintf("t%d", i), `{"n": 1}`).ok(t)
	}
	fence := func() { s.run(t, "fence", strconv.FormatInt(s.head(t), 10), "--timeout", "10s").ok(t) }
	fence()

	r := s.run(t, "deliveries", "bulk", "retry", "--trigger", "bad").ok(t)
	wantLines(t, "a count", r.stdout, "2 deliveries match for retry\n", "  dlv_", "task/t0  failed\n", "  dlv_", "task/t1  failed\n")
	if !strings.Contains(r.stderr, "nothing changed: run it again with --yes to retry them") {
		t.Errorf("stderr %q", r.stderr)
	}
	r = s.run(t, "deliveries", "bulk", "retry", "--trigger", "bad", "--status", "failed", "--yes").ok(t)
	wantLines(t, "a retry", r.stdout, "2 deliveries match for retry\n", "retry: 2 done, 0 skipped\n")
	fence()
	if r := s.run(t, "deliveries", "bulk", "retry", "--when", `row.entityId == "t1"`).ok(t); !strings.HasPrefix(r.stdout, "1 deliveries match for retry\n") {
		t.Errorf("a when: %q", r.stdout)
	}
	r = s.run(t, "deliveries", "bulk", "discard", "--status", "failed", "--yes", "--json").ok(t)
	answers := decodeAll[map[string]any](t, r.stdout)
	if len(answers) != 2 || answers[0]["dryRun"] != true || answers[1]["done"] != float64(2) {
		t.Errorf("--json answers %v", answers)
	}
	if r := s.run(t, "deliveries", "bulk", "release", "--yes").ok(t); r.stdout != "0 deliveries match for release\n" {
		t.Errorf("nothing to release: %q", r.stdout)
	}
	s.run(t, "deliveries", "bulk", "release", "--status", "failed").fails(t, exitError, "error: bad_request: status: release applies to parked deliveries")
	s.run(t, "deliveries", "bulk", "retry", "--when", "row.seq >").fails(t, exitError, "error: bad_request: ")
	s.run(t, "deliveries", "bulk", "frob").fails(t, exitUsage, `ACTION "frob": want retry, release or discard`)
	s.run(t, "deliveries", "bulk").fails(t, exitUsage, "want 1 argument(s) (ACTION)")
}
