package main

import (
	"strings"
	"testing"
)

func TestTriggersCommands(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	doc := `functions:
  to-note: {kind: expr, writes: [note], code: 'put("note", entity.id, {})'}
  to-task: {kind: expr, writes: [task], code: 'put("task", entity.id, {})'}
triggers:
  on-task:
    source: {changes: {types: [task], ops: [put, patch], when: 'row.op == "put"'}}
    function: to-note
  on-note:
    source: {changes: {types: [note]}}
    function: to-task
  tick:
    source: {cron: {schedule: "*/5 * * * *", timezone: Europe/Paris}}
    function: to-task
    enabled: false
`
	r := s.runWith(t, cliOptions{stdin: doc}, "apply", "-f", "-").ok(t)
	if !strings.Contains(r.stdout, "trigger on-note created\n") {
		t.Fatalf("apply printed %q", r.stdout)
	}
	// on-note is saved first; the cycle closes when on-task is saved.
	if !strings.Contains(r.stderr, "warning: trigger on-task: triggers form a cycle on-task → on-note → on-task") {
		t.Fatalf("apply warned %q", r.stderr)
	}

	rows := tableRows(s.run(t, "triggers", "list").ok(t).stdout)
	want := []string{
		"on-note to-task true changes types=note",
		"on-task to-note true changes types=task ops=patch,put when=…",
		"tick to-task false cron */5 * * * * (Europe/Paris)",
	}
	for i, row := range rows {
		rows[i] = strings.Join(strings.Fields(row), " ")
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("triggers list rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if out := s.run(t, "triggers", "list", "--json").ok(t).stdout; !strings.Contains(out, `"triggers"`) {
		t.Fatalf("triggers list --json = %s", out)
	}
	got := decodeOne[map[string]any](t, s.run(t, "triggers", "get", "tick", "-o", "json").ok(t).stdout)
	if got["name"] != "tick" || got["enabled"] != false {
		t.Fatalf("triggers get = %v", got)
	}

	s.run(t, "functions", "delete", "to-task").fails(t, exitError, "error: conflict: ")
	if r := s.run(t, "triggers", "delete", "tick").ok(t); r.stdout != "trigger tick deleted\n" {
		t.Fatalf("triggers delete printed %q", r.stdout)
	}
	s.run(t, "triggers", "get", "tick").fails(t, exitError, "error: not_found: ")
	s.run(t, "triggers", "delete", "tick").fails(t, exitError, "error: not_found: ")
	s.run(t, "triggers", "get").fails(t, exitUsage, "want 1 argument(s)")
	s.run(t, "triggers", "frobnicate").fails(t, exitUsage, `unknown command "frobnicate"`)
}
