package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApplyExample(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	example := filepath.Join("..", "..", "examples", "todo", "eddy.yaml")
	r := s.run(t, "apply", "-f", example).ok(t)
	want := []string{
		"type task created",
		"function mark-overdue created", "function notify-hook created", "function stamp-completed created",
		"trigger mark-overdue created", "trigger notify-on-change created", "trigger stamp-completed created",
	}
	if r.stdout != strings.Join(want, "\n")+"\n" || r.stderr != "" {
		t.Fatalf("apply printed\n%s\nstderr: %s", r.stdout, r.stderr)
	}
	r = s.run(t, "apply", "-f", example).ok(t)
	if strings.Count(r.stdout, " unchanged\n") != len(want) { // identical definitions are not written
		t.Fatalf("second apply printed\n%s", r.stdout)
	}

	// The task lifecycle the example's trigger watches, then a dry run of
	// its function on the row that finished the task.
	s.run(t, "put", "task", "t1", `{"title": "write docs"}`).ok(t)
	s.run(t, "patch", "task", "t1", `{"status": "doing"}`).ok(t)
	s.run(t, "patch", "task", "t1", `{"status": "done"}`).ok(t)
	type action struct {
		Op       string         `json:"op"`
		Type     string         `json:"type"`
		EntityID string         `json:"entityId"`
		Patch    map[string]any `json:"patch"`
	}
	res := decodeOne[struct {
		Actions []action `json:"actions"`
	}](t, s.run(t, "functions", "test", "stamp-completed", "--seq", "3").ok(t).stdout)
	if len(res.Actions) != 1 || res.Actions[0].Op != "patch" || res.Actions[0].EntityID != "t1" || res.Actions[0].Patch["completedAt"] == nil {
		t.Fatalf("functions test = %+v", res)
	}
}

func TestFunctionsCommands(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	doc := `functions:
  stamp:
    kind: expr
    writes: [task]
    code: |
      patch("task", entity.id,
            {"by": trigger})
  hook:
    kind: webhook
    url: http://127.0.0.1:9000/hook
    secret: whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=
`
	s.runWith(t, cliOptions{stdin: doc}, "apply", "-f", "-").ok(t)

	rows := tableRows(s.run(t, "functions", "list").ok(t).stdout)
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "hook ") || !strings.Contains(rows[0], "http://127.0.0.1:9000/hook") ||
		!strings.Contains(rows[1], `patch("task", entity.id,…`) {
		t.Fatalf("functions list rows = %q", rows)
	}
	list := s.run(t, "functions", "list", "--json").ok(t).stdout
	if strings.Contains(list, "whsec_") || !strings.Contains(list, `"functions"`) {
		t.Fatalf("functions list --json = %s", list)
	}
	got := decodeOne[map[string]any](t, s.run(t, "functions", "get", "hook", "-o", "json").ok(t).stdout)
	if got["kind"] != "webhook" || got["secret"] != nil {
		t.Fatalf("functions get = %v", got)
	}

	s.run(t, "put", "task", "t1", `{"title": "x"}`).ok(t)
	res := decodeOne[struct {
		Actions []struct {
			Patch map[string]any `json:"patch"`
		} `json:"actions"`
	}](t, s.run(t, "functions", "test", "stamp", "--seq", "1", "--trigger", "manual").ok(t).stdout)
	if len(res.Actions) != 1 || res.Actions[0].Patch["by"] != "manual" {
		t.Fatalf("functions test = %+v", res)
	}
	hook := decodeOne[struct {
		Request struct {
			Headers map[string]string `json:"headers"`
		} `json:"request"`
	}](t, s.run(t, "functions", "test", "hook", "--seq", "1").ok(t).stdout)
	if hook.Request.Headers["webhook-id"] == "" {
		t.Fatalf("webhook test = %+v", hook)
	}

	s.run(t, "functions", "test", "stamp", "--seq", "9").fails(t, exitError, "error: bad_request: seq")
	s.run(t, "functions", "test", "stamp").fails(t, exitUsage, "missing --seq")
	s.run(t, "functions", "get", "nope").fails(t, exitError, "error: not_found: ")
	if r := s.run(t, "functions", "delete", "hook").ok(t); r.stdout != "function hook deleted\n" {
		t.Fatalf("functions delete printed %q", r.stdout)
	}
	s.run(t, "functions", "delete", "hook").fails(t, exitError, "error: not_found: ")
}

func TestApplyErrors(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	doc := `functions:
  broken:
    kind: expr
    code: patch("task", nope, {})
`
	if err := os.WriteFile(bad, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	s.run(t, "apply", "-f", bad).fails(t, exitError, "function broken: bad_request: code: line 1, column")

	s.runWith(t, cliOptions{stdin: "triggers:\n  t:\n    source: {changes: {}}\n    function: missing\n"}, "apply", "-f", "-").
		fails(t, exitError, "trigger t: bad_request: function: unknown function")
	s.runWith(t, cliOptions{stdin: "functions:\n  f: {kind: go, handler: h}\n"}, "types", "apply", "-f", "-").
		fails(t, exitUsage, `unknown key "functions"`)

	tests := []struct {
		name, doc, want string
	}{
		{"unknown key", "journals: {j: {}}\n", `unknown key "journals"`},
		{"view not a map", "views: {v: 1}\n", "view v: the definition must be a map"},
		{"empty", "{}\n", "the document must be a map"},
		{"empty functions", "functions: {}\n", "'functions' must map function names"},
		{"trigger not a map", "triggers: {t: 1}\n", "trigger t: the definition must be a map"},
	}
	for _, tt := range tests {
		_, err := parseApplyDocument([]byte(tt.doc), applySections)
		if err == nil || !strings.Contains(err.Error(), tt.want) || exitCode(err) != exitUsage {
			t.Errorf("%s: err = %v, want a usage error containing %q", tt.name, err, tt.want)
		}
	}
}
