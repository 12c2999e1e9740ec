package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestContexts(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.run(t, "spaces", "create", "team-a").ok(t)
	s.run(t, "--space", "team-a", "put", "task", "t1", `{"title": "in team-a"}`).ok(t)

	// The context's token file lives outside any --data directory.
	tokFile := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(tokFile, []byte(s.admin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "eddy", "config.yaml")
	env := map[string]string{"EDDY_CONFIG": cfg}
	run := func(args ...string) result {
		t.Helper()
		var o, e syncBuffer
		a := &app{stdout: &o, stderr: &e, stdin: strings.NewReader(""), getenv: func(k string) string { return env[k] }}
		// No --server, --data or --token: the context supplies them.
		code := a.run(t.Context(), args)
		return result{code: code, stdout: o.String(), stderr: e.String()}
	}

	run("config", "set-context", "a", "--server", s.url, "--token-file", tokFile, "--space", "team-a").ok(t)
	run("config", "set-context", "b", "--server", s.url, "--token-file", tokFile).ok(t)
	run("get", "task", "t1").fails(t, exitUsage, "no token") // no current context yet
	if out := run("config", "use-context", "a").ok(t).stdout; out != "switched to context a\n" {
		t.Fatalf("use-context: %q", out)
	}
	got := decodeOne[record](t, run("get", "task", "t1").ok(t).stdout)
	if got.ID != "t1" {
		t.Fatalf("get through context a: %+v", got)
	}
	// --context, EDDY_CONTEXT and --space override the current context.
	run("--context", "b", "get", "task", "t1").fails(t, exitError, "error: not_found: ")
	run("--space", "default", "get", "task", "t1").fails(t, exitError, "error: not_found: ")
	env["EDDY_CONTEXT"] = "b"
	run("get", "task", "t1").fails(t, exitError, "error: not_found: ")
	delete(env, "EDDY_CONTEXT")

	// get-contexts marks the current one; set-context changes only the
	// fields given.
	rows := tableRows(run("config", "get-contexts").ok(t).stdout)
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "*") || !strings.Contains(rows[0], "team-a") || strings.HasPrefix(rows[1], "*") {
		t.Fatalf("get-contexts:\n%s", strings.Join(rows, "\n"))
	}
	run("config", "set-context", "a", "--space", "default").ok(t)
	run("get", "task", "t1").fails(t, exitError, "error: not_found: ")
	if out := run("config", "current-context").ok(t).stdout; out != "a\n" {
		t.Fatalf("current-context: %q", out)
	}

	// A bad token in a context is named in the error.
	bad := filepath.Join(t.TempDir(), "bad.token")
	if err := os.WriteFile(bad, []byte("bogus"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("config", "set-context", "a", "--token-file", bad).ok(t)
	run("get", "task", "t1").fails(t, exitError, "(token from context a ("+bad+"))")

	run("--context", "nope", "get", "task", "t1").fails(t, exitUsage, `context "nope" is not in`)
	run("config", "use-context", "nope").fails(t, exitUsage, `context "nope" is not in`)
	run("config", "delete-context", "a").ok(t)
	run("config", "current-context").fails(t, exitError, "no current context")
	if fi, err := os.Stat(cfg); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file: %v %v", fi, err)
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.runWith(t, cliOptions{stdin: `types: {task: {}, note: {}}
functions: {stamp: {kind: expr, writes: [task], code: 'patch("task", entity.id, {"a": 1})'}}
triggers: {on-task: {source: {changes: {types: [task]}}, function: stamp}, other: {source: {changes: {types: [note]}}, function: stamp}}
views: {open: {version: v1, types: [task], filter: {cel: "true"}}}
`}, "apply", "-f", "-").ok(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"triggers", "get", ""}, "on-task\nother\n"},
		{[]string{"triggers", "describe", "o"}, "on-task\nother\n"},
		{[]string{"triggers", "replay", "o"}, "on-task\nother\n"},
		{[]string{"triggers", "disable", "on"}, "on-task\n"},
		{[]string{"functions", "test", ""}, "stamp\n"},
		{[]string{"views", "bootstrap", ""}, "open\n"},
		{[]string{"types", "get", ""}, "note\ntask\n"},
		{[]string{"get", "t"}, "task\n"},
		{[]string{"deliveries", "list", "--trigger", ""}, "on-task\nother\n"},
		{[]string{"triggers", "get", "on-task", ""}, ""},
		{[]string{"get", "task", "-o", ""}, "json\nyaml\nwide\nname\njsonpath=\n"},
	}
	for _, tt := range tests {
		out := s.run(t, append([]string{"__complete"}, tt.args...)...).ok(t).stdout
		names, _, _ := strings.Cut(out, ":")
		if names != tt.want {
			t.Errorf("complete %v = %q, want %q", tt.args, names, tt.want)
		}
	}
}
