package main

import (
	"strings"
	"testing"
)

func TestTriggersBacktest(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	doc := `functions:
  f: {kind: expr, code: 'nil'}
triggers:
  done:
    source: {changes: {types: [task], when: 'entity.properties.status == "done"'}}
    function: f
  tick:
    source: {cron: {schedule: "@every 1m"}}
    function: f
`
	s.runWith(t, cliOptions{stdin: doc}, "apply", "-f", "-").ok(t)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		status := "todo"
		if id == "b" || id == "d" {
			status = "done"
		}
		s.run(t, "put", "task", id, `{"status": "`+status+`"}`).ok(t)
	}

	r := s.run(t, "triggers", "backtest", "done", "--chunk", "2").ok(t)
	if !strings.Contains(r.stdout, "trigger done, seqs (0, 5]: 5 rows scanned") ||
		!strings.Contains(r.stdout, "matched 2, not matched 3, echo 0, errors 0, coalesced 0") ||
		!strings.Contains(r.stdout, "projected depth 1") {
		t.Fatalf("summary:\n%s", r.stdout)
	}
	_, table, _ := strings.Cut(r.stdout, "\n\n")
	rows := tableRows(table)
	if len(rows) != 2 || !strings.HasPrefix(strings.Join(strings.Fields(rows[0]), " "), "2 task b put matched") {
		t.Fatalf("samples = %q\n%s", rows, r.stdout)
	}
	if r.stderr != "scanned 2/5\nscanned 4/5\nscanned 5/5\n" {
		t.Fatalf("progress = %q", r.stderr)
	}

	// A changed definition from a file, one chunk, as JSON.
	changed := `source: {changes: {types: [task], when: 'entity.properties.status == "todo"'}}
function: f
`
	got := decodeOne[backtestResult](t, s.runWith(t, cliOptions{stdin: changed},
		"triggers", "backtest", "done", "-f", "-", "--from", "2", "--samples", "1", "--json").ok(t).stdout)
	if got.Matched != 2 || got.Scanned != 3 || len(got.Samples) != 1 || got.Samples[0].EntityID != "c" || got.From != 2 {
		t.Fatalf("changed = %+v", got)
	}

	s.run(t, "triggers", "backtest", "tick").fails(t, exitError, "error: bad_request: ")
	s.run(t, "triggers", "backtest", "done", "--to", "99").fails(t, exitError, "error: bad_request: ")
	s.run(t, "triggers", "backtest", "missing").fails(t, exitError, "error: not_found: ")
}
