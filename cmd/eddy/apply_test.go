package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configDoc declares one of each kind.
const configDoc = `types:
  task:
    properties:
      title: {kind: string}
functions:
  stamp:
    kind: expr
    writes: [task]
    code: 'patch("task", entity.id, {"stamped": true})'
  hook:
    kind: webhook
    url: https://example.com/hook
triggers:
  on-task:
    source: {changes: {types: [task]}}
    function: stamp
views:
  open:
    version: v1
    types: [task]
    filter: {cel: "true"}
`

// writeFiles writes name -> content into a new directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestApplyIsAtomic(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	dir := writeFiles(t, map[string]string{"a.yaml": configDoc, "b.yaml": `functions:
  broken:
    kind: expr
    writes: [task]
    code: patch("task", nope, {})
`})
	// One bad definition applies nothing, and is named by file, line and
	// field.
	s.run(t, "apply", "-f", dir).fails(t, exitError, filepath.Join(dir, "b.yaml")+":5: function broken: bad_request: code: ")
	s.run(t, "types", "get", "task").fails(t, exitError, "error: not_found: ")
	s.run(t, "functions", "get", "stamp").fails(t, exitError, "error: not_found: ")

	// The field's line, also for fields that are nested or missing.
	s.runWith(t, cliOptions{stdin: configDoc + "  bad:\n    version: v1\n    types: [task]\n    filter: {cel: \"nope(\"}\n"}, "apply", "-f", "-").
		fails(t, exitError, "<stdin>:25: view bad: bad_request: filter.cel: ")
	s.runWith(t, cliOptions{stdin: "triggers:\n  t:\n    source: {changes: {}}\n    function: missing\n"}, "apply", "-f", "-").
		fails(t, exitError, "<stdin>:4: trigger t: bad_request: function: unknown function")

	// A definition declared twice is refused before anything is sent.
	dup := writeFiles(t, map[string]string{"a.yaml": configDoc, "b.yml": "types:\n  task: {}\n"})
	s.run(t, "apply", "-f", dup).fails(t, exitUsage, "a.yaml:2 and "+filepath.Join(dup, "b.yml")+":2 both declare type task")
	s.run(t, "apply", "-f", t.TempDir()).fails(t, exitUsage, "holds no .yaml, .yml or .json files")
	s.run(t, "apply").fails(t, exitUsage, "missing -f FILE")
}

func TestApplyDryRunDiffPrune(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	file := filepath.Join(writeFiles(t, map[string]string{"eddy.yaml": configDoc}), "eddy.yaml")

	r := s.run(t, "apply", "-f", file, "--dry-run").ok(t)
	want := "type task created\nfunction hook created\nfunction stamp created\nview open created\ntrigger on-task created\n"
	if r.stdout != want || !strings.Contains(r.stderr, "dry run: nothing was written") {
		t.Fatalf("dry run:\n%s\nstderr: %s", r.stdout, r.stderr)
	}
	s.run(t, "functions", "get", "stamp").fails(t, exitError, "error: not_found: ")
	if r := s.run(t, "apply", "-f", file).ok(t); r.stdout != want {
		t.Fatalf("apply:\n%s", r.stdout)
	}

	// Identical definitions are unchanged and not written.
	before := s.run(t, "types", "get", "task", "-o", "jsonpath={.updatedAt}").ok(t).stdout
	r = s.run(t, "apply", "-f", file).ok(t)
	if strings.Count(r.stdout, " unchanged\n") != 5 {
		t.Fatalf("re-apply:\n%s", r.stdout)
	}
	if after := s.run(t, "types", "get", "task", "-o", "jsonpath={.updatedAt}").ok(t).stdout; after != before {
		t.Fatalf("re-apply wrote the type: updatedAt %s -> %s", before, after)
	}
	s.run(t, "diff", "-f", file, "--exit-code").ok(t)

	// diff shows each change; --prune what would be deleted.
	changed := strings.Replace(configDoc, "url: https://example.com/hook", "url: https://example.com/other", 1)
	changed, _, _ = strings.Cut(changed, "views:") // no views
	changed = strings.Replace(changed, "  on-task:", "  on-task-2:", 1)
	if err := os.WriteFile(file, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	r = s.run(t, "diff", "-f", file).ok(t)
	for _, line := range []string{
		"type task unchanged\n",
		"function hook changed\n",
		"    - url: https://example.com/hook\n",
		"    + url: https://example.com/other\n",
		"      kind: webhook\n",
		"function stamp unchanged\n",
	} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("diff lacks %q:\n%s", line, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "deleted") || !strings.Contains(r.stdout, "trigger on-task-2 created\n") || !strings.Contains(r.stdout, "    + function: stamp\n") {
		t.Errorf("diff without --prune:\n%s", r.stdout)
	}
	// Only the sections the files hold are pruned: views stay.
	r = s.run(t, "diff", "-f", file, "--prune").ok(t)
	if !strings.Contains(r.stdout, "trigger on-task-2 created\n") || !strings.Contains(r.stdout, "trigger on-task would be deleted\n") || strings.Contains(r.stdout, "view open") {
		t.Fatalf("diff --prune:\n%s", r.stdout)
	}
	s.run(t, "diff", "-f", file, "--exit-code").fails(t, exitError, "the files differ")
	s.run(t, "triggers", "get", "on-task").ok(t) // diff wrote nothing

	// The trigger still names stamp: pruning functions alone is refused.
	onlyHook := "functions:\n  hook:\n    kind: webhook\n    url: https://example.com/other\n"
	s.runWith(t, cliOptions{stdin: onlyHook}, "apply", "-f", "-", "--prune").
		fails(t, exitError, "trigger on-task: bad_request: function: unknown function \"stamp\"")

	r = s.run(t, "apply", "-f", file, "--prune").ok(t)
	if r.stdout != "type task unchanged\nfunction hook changed\nfunction stamp unchanged\ntrigger on-task-2 created\ntrigger on-task deleted\n" {
		t.Fatalf("apply --prune:\n%s", r.stdout)
	}
	s.run(t, "triggers", "get", "on-task").fails(t, exitError, "error: not_found: ")
	s.run(t, "views", "get", "open").ok(t)
}

func TestExportRoundTrips(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	// The example's webhook secrets are set by value, which export never
	// shows: applying the export back would remove them, and says so.
	example := filepath.Join("..", "..", "examples", "todo", "eddy.yaml")
	s.run(t, "apply", "-f", example).ok(t)
	r := s.runWith(t, cliOptions{stdin: s.run(t, "export").ok(t).stdout}, "diff", "-f", "-").ok(t)
	if !strings.Contains(r.stdout, "function notify-hook changed\n") ||
		!strings.Contains(r.stderr, "warning: function notify-hook: removes the webhook secret set by value") {
		t.Fatalf("diff of an export that drops secrets:\n%s\nstderr: %s", r.stdout, r.stderr)
	}
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.Contains(l, "secret: whsec_") {
			kept = append(kept, l)
		}
	}
	s.runWith(t, cliOptions{stdin: strings.Join(kept, "\n")}, "apply", "-f", "-").ok(t)
	_, views, ok := strings.Cut(configDoc, "views:")
	if !ok {
		t.Fatal("configDoc has no views")
	}
	s.runWith(t, cliOptions{stdin: "views:" + views}, "apply", "-f", "-").ok(t)

	first := s.run(t, "export").ok(t).stdout
	for _, want := range []string{"types:\n  task:\n", "functions:\n", "triggers:\n", "views:\n  open:\n"} {
		if !strings.Contains(first, want) {
			t.Fatalf("export lacks %q:\n%s", want, first)
		}
	}
	if strings.Contains(first, "whsec_") || strings.Contains(first, "name:") {
		t.Fatalf("export shows a secret or names:\n%s", first)
	}
	file := filepath.Join(t.TempDir(), "exported.yaml")
	s.run(t, "export", "-f", file).ok(t)
	data, err = os.ReadFile(file)
	if err != nil || string(data) != first {
		t.Fatalf("export -f wrote %q (%v)", data, err)
	}
	r = s.run(t, "apply", "-f", file).ok(t)
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if !strings.HasSuffix(l, " unchanged") {
			t.Fatalf("applying the export changed something:\n%s", r.stdout)
		}
	}
	if again := s.run(t, "export").ok(t).stdout; again != first {
		t.Fatalf("export after apply differs:\n%s\nfirst:\n%s", again, first)
	}

	// -o yaml is the export itself; -o json and --jq the same document.
	if y := s.run(t, "export", "-o", "yaml").ok(t).stdout; y != first {
		t.Fatalf("export -o yaml differs:\n%s", y)
	}
	js := s.run(t, "export", "-o", "json").ok(t).stdout
	if r := s.runWith(t, cliOptions{stdin: js}, "apply", "-f", "-").ok(t); strings.Contains(r.stdout, " changed") || strings.Contains(r.stdout, " created") {
		t.Fatalf("applying export -o json changed something:\n%s", r.stdout)
	}
	if out := s.run(t, "export", "--jq", ".views | keys[]").ok(t).stdout; out != "open\n" {
		t.Fatalf("export --jq = %q", out)
	}
	names := s.run(t, "export", "-o", "name").ok(t).stdout
	if !strings.HasPrefix(names, "type/") || !strings.Contains(names, "\nview/open\n") {
		t.Fatalf("export -o name:\n%s", names)
	}
}

// TestApplySecretFromEnv sets a process environment variable the in-process
// server reads: it cannot run in parallel.
func TestApplySecretFromEnv(t *testing.T) {
	t.Setenv("EDDY_TEST_HOOK_SECRET", "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=")
	s := newTestServer(t)
	doc := "functions:\n  hook:\n    kind: webhook\n    url: https://example.com/hook\n    secret: {fromEnv: EDDY_TEST_HOOK_SECRET}\n"
	s.runWith(t, cliOptions{stdin: doc}, "apply", "-f", "-").ok(t)
	out := s.run(t, "export").ok(t).stdout
	if !strings.Contains(out, "fromEnv: EDDY_TEST_HOOK_SECRET") || strings.Contains(out, "whsec_") {
		t.Fatalf("export:\n%s", out)
	}
	if got := s.run(t, "functions", "get", "hook", "-o", "yaml").ok(t).stdout; strings.Contains(got, "whsec_") || !strings.Contains(got, "fromEnv: EDDY_TEST_HOOK_SECRET") {
		t.Fatalf("functions get:\n%s", got)
	}
	if r := s.runWith(t, cliOptions{stdin: out}, "apply", "-f", "-").ok(t); r.stdout != "function hook unchanged\n" {
		t.Fatalf("re-apply: %s", r.stdout)
	}
	// A variable the server does not have is named, with the line.
	missing := strings.Replace(doc, "EDDY_TEST_HOOK_SECRET", "EDDY_TEST_UNSET_SECRET", 1)
	s.runWith(t, cliOptions{stdin: missing}, "apply", "-f", "-").
		fails(t, exitError, "<stdin>:5: function hook: bad_request: secret: environment variable EDDY_TEST_UNSET_SECRET is not set on the server")
}
