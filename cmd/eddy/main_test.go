package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeAnswer is the answer of put, patch and delete.
type writeAnswer struct {
	Receipt struct {
		Status  string `json:"status"`
		Seq     int64  `json:"seq"`
		Version int64  `json:"version"`
	} `json:"receipt"`
	Entity *record `json:"entity"`
}

type record struct {
	Type       string         `json:"type"`
	ID         string         `json:"id"`
	Version    int64          `json:"version"`
	Properties map[string]any `json:"properties"`
}

func TestEntityRoundTrip(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)

	w := decodeOne[writeAnswer](t, s.run(t, "put", "task", "t1", `{"title": "x", "status": "open"}`).ok(t).stdout)
	if w.Receipt.Status != "applied" || w.Receipt.Seq != 1 || w.Entity == nil || w.Entity.Properties["title"] != "x" {
		t.Fatalf("put answer = %+v", w)
	}

	got := decodeOne[record](t, s.run(t, "get", "task", "t1").ok(t).stdout)
	if got.Version != 1 || got.Properties["status"] != "open" {
		t.Fatalf("get = %+v", got)
	}

	w = decodeOne[writeAnswer](t, s.run(t, "patch", "task", "t1", "--if-match", "1", `{"status": "done"}`).ok(t).stdout)
	if w.Receipt.Seq != 2 || w.Entity.Properties["status"] != "done" || w.Entity.Properties["title"] != "x" {
		t.Fatalf("patch answer = %+v", w)
	}

	// A second identical put is a no-op: it appends nothing.
	s.run(t, "put", "task", "t1", `{"title": "x", "status": "done"}`).ok(t)
	w = decodeOne[writeAnswer](t, s.run(t, "put", "task", "t1", `{"title": "x", "status": "done"}`).ok(t).stdout)
	if w.Receipt.Status != "noop" {
		t.Fatalf("identical put status = %q, want noop", w.Receipt.Status)
	}

	w = decodeOne[writeAnswer](t, s.run(t, "delete", "task", "t1").ok(t).stdout)
	if w.Receipt.Status != "applied" || w.Entity != nil {
		t.Fatalf("delete answer = %+v", w)
	}
	s.run(t, "get", "task", "t1").fails(t, exitError, "error: not_found: ")
}

func TestPutBodySources(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	file := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(file, []byte(`{"from": "file"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"argument", []string{"put", "note", "a", `{"from": "arg"}`}, "", "arg"},
		{"file", []string{"put", "note", "b", "-f", file}, "", "file"},
		{"stdin dash", []string{"put", "note", "c", "-"}, `{"from": "stdin"}`, "stdin"},
		{"file dash", []string{"put", "note", "d", "-f", "-"}, `{"from": "stdin-f"}`, "stdin-f"},
	}
	for _, tt := range tests {
		w := decodeOne[writeAnswer](t, s.runWith(t, cliOptions{stdin: tt.stdin}, tt.args...).ok(t).stdout)
		if w.Entity == nil || w.Entity.Properties["from"] != tt.want {
			t.Errorf("%s: entity = %+v, want from=%s", tt.name, w.Entity, tt.want)
		}
	}
}

func TestListAll(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for i := range 5 {
		s.run(t, "put", "item", fmt.Sprintf("i%d", i), fmt.Sprintf(`{"n": %d}`, i)).ok(t)
	}

	r := s.run(t, "list", "item", "--limit", "2").ok(t)
	if got := decodeAll[record](t, r.stdout); len(got) != 2 || got[0].ID != "i0" {
		t.Fatalf("first page = %+v", got)
	}
	if !strings.Contains(r.stderr, "more: next page with --after ") {
		t.Fatalf("stderr %q does not point at the next page", r.stderr)
	}

	// A write after the first page does not show in the rest of the walk:
	// every page is as of the first page's head.
	got := decodeAll[record](t, s.run(t, "list", "item", "--limit", "2", "--all").ok(t).stdout)
	if len(got) != 5 {
		t.Fatalf("--all returned %d items, want 5", len(got))
	}
	for i, rec := range got {
		if want := fmt.Sprintf("i%d", i); rec.ID != want {
			t.Errorf("item %d = %s, want %s", i, rec.ID, want)
		}
	}
}

// seedLog writes four rows: task t1 put, task t2 put, note n1 put, task t1
// patch.
func seedLog(t *testing.T, s *testServer) {
	t.Helper()
	s.run(t, "put", "task", "t1", `{"title": "a"}`).ok(t)
	s.run(t, "put", "task", "t2", `{"title": "b"}`).ok(t)
	s.run(t, "put", "note", "n1", `{"text": "c"}`).ok(t)
	s.run(t, "patch", "task", "t1", `{"title": "a2"}`).ok(t)
}

// historyPage is a page of GET .../changes?before=.
type historyPage struct {
	Changes []row  `json:"changes"`
	Cursor  *int64 `json:"cursor"`
}

func seqs(rows []row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.Seq
	}
	return out
}

func TestHistory(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	seedLog(t, s)

	r := s.run(t, "history").ok(t)
	lines := tableRows(r.stdout)
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "4 ") || !strings.HasPrefix(lines[3], "1 ") {
		t.Fatalf("history table, want seqs 4..1 newest first:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "SEQ") || !strings.Contains(lines[0], "patch") || !strings.Contains(lines[0], "owner") {
		t.Fatalf("history table lacks header, op or actor:\n%s", r.stdout)
	}

	tests := []struct {
		name string
		args []string
		want []int64
	}{
		{"all pages", []string{"--limit", "1", "--all"}, []int64{4, 3, 2, 1}},
		{"types", []string{"--types", "task", "--all"}, []int64{4, 2, 1}},
		{"ops", []string{"--ops", "patch", "--all"}, []int64{4}},
		{"exclude types", []string{"--exclude-types", "task", "--all"}, []int64{3}},
		{"entity", []string{"--entity", "task/t1", "--all"}, []int64{4, 1}},
		{"actors", []string{"--actors", "owner", "--before", "3"}, []int64{2, 1}},
		{"q", []string{"--q", "n1", "--all"}, []int64{3}},
	}
	for _, tt := range tests {
		out := s.run(t, append([]string{"history", "--json"}, tt.args...)...).ok(t).stdout
		var got []int64
		for _, p := range decodeAll[historyPage](t, out) {
			got = append(got, seqs(p.Changes)...)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: seqs = %v, want %v", tt.name, got, tt.want)
		}
	}

	r = s.run(t, "history", "--limit", "2").ok(t)
	if len(tableRows(r.stdout)) != 2 || !strings.Contains(r.stderr, "more: next page with --before 3") {
		t.Fatalf("one page of two: stdout %q stderr %q", r.stdout, r.stderr)
	}
}

func TestChangesForward(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	seedLog(t, s)

	out := s.run(t, "changes", "--from", "1", "--limit", "2", "--all", "--json").ok(t).stdout
	var got []int64
	for _, p := range decodeAll[historyPage](t, out) {
		got = append(got, seqs(p.Changes)...)
	}
	if fmt.Sprint(got) != "[2 3 4]" {
		t.Fatalf("forward seqs = %v, want [2 3 4]", got)
	}

	r := s.run(t, "changes", "--types", "note").ok(t)
	if lines := tableRows(r.stdout); len(lines) != 1 || !strings.HasPrefix(lines[0], "3 ") {
		t.Fatalf("forward table filtered to notes:\n%s", r.stdout)
	}
}

// pullAnswer is a page of GET .../log.
type pullAnswer struct {
	Commits []struct {
		Seq     int64 `json:"seq"`
		Changes []struct {
			Kind string `json:"kind"`
		} `json:"changes"`
		Receipt struct {
			Status string `json:"status"`
		} `json:"receipt"`
		Provenance struct {
			Actor string `json:"actor"`
		} `json:"provenance"`
	} `json:"commits"`
	NextCursor int64 `json:"nextCursor"`
	HasMore    bool  `json:"hasMore"`
}

func TestLog(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	seedLog(t, s)

	pages := decodeAll[pullAnswer](t, s.run(t, "log", "--after", "0", "--limit", "1", "--follow-pages").ok(t).stdout)
	var got []int64
	for _, p := range pages {
		for _, c := range p.Commits {
			got = append(got, c.Seq)
			if len(c.Changes) != 1 || c.Receipt.Status != "applied" || c.Provenance.Actor != "owner" {
				t.Errorf("commit %d = %+v", c.Seq, c)
			}
		}
	}
	if fmt.Sprint(got) != "[1 2 3 4]" || len(pages) != 4 || pages[3].HasMore {
		t.Fatalf("pulled seqs %v in %d pages, want [1 2 3 4] in 4", got, len(pages))
	}

	r := s.run(t, "log", "--after", "2", "--limit", "1").ok(t)
	if p := decodeOne[pullAnswer](t, r.stdout); p.NextCursor != 3 || !p.HasMore {
		t.Fatalf("page after 2 = %+v", p)
	}
	if !strings.Contains(r.stderr, "more: next page with --after 3") {
		t.Fatalf("stderr %q does not point at the next page", r.stderr)
	}
	s.run(t, "log", "--after", "99").fails(t, exitError, "error: bad_request: ")
}

func TestTokens(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	seedLog(t, s)

	r := s.run(t, "tokens", "create", "--role", "reader", "--types", "note", "--actor", "auditor").ok(t)
	id, secret := tokenFields(t, r.stdout)

	list := s.run(t, "tokens", "list").ok(t).stdout
	if !strings.Contains(list, id) || !strings.Contains(list, "auditor") || strings.Contains(list, secret) {
		t.Fatalf("tokens list:\n%s", list)
	}

	reader := cliOptions{env: map[string]string{"EDDY_TOKEN": secret}}
	// The reader sees only notes, and may not pull the raw log.
	out := s.runWith(t, reader, "history", "--json", "--all").ok(t).stdout
	var got []int64
	for _, p := range decodeAll[historyPage](t, out) {
		got = append(got, seqs(p.Changes)...)
	}
	if fmt.Sprint(got) != "[3]" {
		t.Fatalf("reader history seqs = %v, want [3]", got)
	}
	s.runWith(t, reader, "log").fails(t, exitError, "error: forbidden: ")
	s.runWith(t, reader, "put", "note", "n2", "{}").fails(t, exitError, "error: forbidden: ")

	// log:read lets a reader pull.
	r = s.run(t, "tokens", "create", "--role", "reader", "--scopes", "log:read").ok(t)
	_, puller := tokenFields(t, r.stdout)
	s.runWith(t, cliOptions{env: map[string]string{"EDDY_TOKEN": puller}}, "log").ok(t)

	s.run(t, "tokens", "revoke", id).ok(t)
	if strings.Contains(s.run(t, "tokens", "list").ok(t).stdout, id) {
		t.Fatal("revoked token still listed")
	}
	s.runWith(t, reader, "history").fails(t, exitError, "error: unauthorized: ")
	s.run(t, "tokens", "revoke", id).fails(t, exitError, "error: not_found: ")
	s.run(t, "tokens", "create", "--role", "superuser").fails(t, exitError, "error: bad_request: ")

	// A journal client's token acts for a user of an application.
	r = s.run(t, "tokens", "create", "--role", "reader", "--user", "u1", "--application", "mail-app", "--json").ok(t)
	if !strings.Contains(r.stdout, `"token"`) {
		t.Fatalf("journal token: %s", r.stdout)
	}
	s.run(t, "tokens", "create", "--role", "reader", "--application", "mail-app").fails(t, exitError, "error: bad_request: ")
}

// tokenFields reads the id and secret eddy tokens create prints.
func tokenFields(t *testing.T, out string) (id, secret string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		switch k {
		case "id":
			id = strings.TrimSpace(v)
		case "token":
			secret = strings.TrimSpace(v)
		}
	}
	if !strings.HasPrefix(id, "tok_") || !strings.HasPrefix(secret, "eddy_") {
		t.Fatalf("tokens create printed %q", out)
	}
	return id, secret
}

func TestTypesApply(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	dir := t.TempDir()
	yamlFile := filepath.Join(dir, "types.yaml")
	doc := `types:
  task:
    strict: true
    properties:
      title: {kind: string, required: true}
      status: {kind: string}
  user:
    properties:
      name: {kind: string}
`
	if err := os.WriteFile(yamlFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	r := s.run(t, "types", "apply", "-f", yamlFile).ok(t)
	if r.stdout != "type task created\ntype user created\n" {
		t.Fatalf("apply printed %q", r.stdout)
	}

	type typeDef struct {
		Type       string `json:"type"`
		Definition struct {
			Strict bool `json:"strict"`
		} `json:"definition"`
	}
	td := decodeOne[typeDef](t, s.run(t, "types", "get", "task", "-o", "json").ok(t).stdout)
	if td.Type != "task" || !td.Definition.Strict {
		t.Fatalf("types get = %+v", td)
	}

	// The strict type refuses an undeclared property.
	s.run(t, "put", "task", "t1", `{"title": "x", "color": "red"}`).fails(t, exitError, "error: unprocessable: ")
	s.run(t, "put", "task", "t1", `{"title": "x"}`).ok(t)

	// JSON through stdin with the top-level apply.
	s.runWith(t, cliOptions{stdin: `{"types": {"label": {"properties": {"name": {"kind": "string"}}}}}`}, "apply", "-f", "-").ok(t)
	s.run(t, "types", "get", "label").ok(t)
	s.run(t, "types", "get", "nothing").fails(t, exitError, "error: not_found: ")

	list := s.run(t, "types", "list", "-o", "json").ok(t).stdout
	for _, name := range []string{`"label"`, `"task"`, `"user"`} {
		if !strings.Contains(list, name) {
			t.Errorf("types list lacks %s:\n%s", name, list)
		}
	}
	if r := s.run(t, "types", "delete", "label").ok(t); r.stdout != "type label deleted\n" {
		t.Fatalf("types delete printed %q", r.stdout)
	}
	s.run(t, "types", "get", "label").fails(t, exitError, "error: not_found: ")
}

// spaceAnswer is a space as the API shows it.
type spaceAnswer struct {
	Space   string `json:"space"`
	Head    int64  `json:"head"`
	Horizon int64  `json:"horizon"`
}

func TestPrune(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	seedLog(t, s)

	sp := decodeOne[spaceAnswer](t, s.run(t, "prune", "--through", "2").ok(t).stdout)
	if sp.Head != 4 || sp.Horizon != 2 {
		t.Fatalf("after prune head/horizon = %d/%d, want 4/2", sp.Head, sp.Horizon)
	}

	s.run(t, "changes", "--from", "1").fails(t, exitError, "error: compacted: ")
	out := s.run(t, "history", "--json", "--all").ok(t).stdout
	var got []int64
	for _, p := range decodeAll[historyPage](t, out) {
		got = append(got, seqs(p.Changes)...)
	}
	if fmt.Sprint(got) != "[4 3]" {
		t.Fatalf("history after prune = %v, want [4 3]", got)
	}
	s.run(t, "log", "--after", "0").fails(t, exitError, "error: compacted: ")
	s.run(t, "prune", "--through", "99").fails(t, exitError, "error: bad_request: ")
}

func TestSpaces(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)

	s.run(t, "spaces", "create", "team-a").ok(t)
	sp := decodeOne[spaceAnswer](t, s.run(t, "spaces", "get", "team-a").ok(t).stdout)
	if sp.Space != "team-a" || sp.Head != 0 {
		t.Fatalf("spaces get = %+v", sp)
	}
	s.run(t, "--space", "team-a", "put", "task", "t1", `{}`).ok(t)
	s.run(t, "--space", "team-a", "get", "task", "t1").ok(t)
	s.run(t, "get", "task", "t1").fails(t, exitError, "error: not_found: ")
	s.run(t, "spaces", "get", "nowhere").fails(t, exitError, "error: not_found: ")
	s.run(t, "spaces", "create", "Bad_Name").fails(t, exitError, "error: bad_request: ")
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"unknown subcommand", []string{"tokens", "frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"unknown flag", []string{"get", "--nope", "task", "t1"}, exitUsage, "unknown flag: --nope"},
		{"put without body", []string{"put", "task", "t1"}, exitUsage, "missing the JSON object"},
		{"put bad json", []string{"put", "task", "t1", `{"title":`}, exitUsage, "must be a JSON object"},
		{"put array", []string{"put", "task", "t1", `[1]`}, exitUsage, "must be a JSON object"},
		{"put body twice", []string{"put", "task", "t1", `{}`, "-f", "x.json"}, exitUsage, "not both"},
		{"put missing file", []string{"put", "task", "t1", "-f", "/nonexistent/x.json"}, exitUsage, "read /nonexistent/x.json"},
		{"put bad type", []string{"put", "Task!", "t1", `{}`}, exitError, "error: bad_request: "},
		{"patch no args", []string{"patch"}, exitUsage, "want TYPE ID"},
		{"delete one arg", []string{"delete", "task"}, exitUsage, "want 2 argument(s)"},
		{"delete missing", []string{"delete", "task", "nope"}, exitError, "error: not_found: "},
		{"get one arg", []string{"get", "task"}, exitUsage, "want 2 argument(s)"},
		{"list no type", []string{"list"}, exitUsage, "want 1 argument(s)"},
		{"list negative limit", []string{"list", "task", "--limit", "-1"}, exitUsage, "--limit"},
		{"list too large limit", []string{"list", "task", "--limit", "5000"}, exitError, "error: bad_request: limit"},
		{"list bad cursor", []string{"list", "task", "--after", "zzz"}, exitError, "error: bad_request: after"},
		{"history bad entity", []string{"history", "--entity", "task"}, exitUsage, "want TYPE/ID"},
		{"history bad before", []string{"history", "--before", "x"}, exitUsage, "invalid argument"},
		{"history bad op", []string{"history", "--ops", "explode"}, exitError, "error: bad_request: "},
		{"changes above head", []string{"changes", "--from", "50"}, exitError, "error: bad_request: "},
		{"log negative", []string{"log", "--after", "-1"}, exitUsage, "must not be negative"},
		{"types apply no file", []string{"types", "apply"}, exitUsage, "missing -f"},
		{"types apply bad yaml", []string{"types", "apply", "-f", "-"}, exitUsage, "the document must be a map"},
		{"types get no name", []string{"types", "get"}, exitUsage, "want 1 argument(s)"},
		{"tokens create no role", []string{"tokens", "create"}, exitUsage, "missing --role"},
		{"tokens revoke no id", []string{"tokens", "revoke"}, exitUsage, "want 1 argument(s)"},
		{"prune no through", []string{"prune"}, exitUsage, "missing --through"},
		{"spaces create no name", []string{"spaces", "create"}, exitUsage, "want 1 argument(s)"},
		{"bad server", []string{"--server", "ftp://x", "get", "task", "t1"}, exitUsage, "--server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s.runWith(t, cliOptions{stdin: "- just a list\n"}, tt.args...).fails(t, tt.code, tt.want)
		})
	}
}

func TestTypesDocumentErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc, want string
	}{
		{"not yaml", "types: [", "parse"},
		{"unknown key", "types: {a: {}}\ntriggers: {}\n", `unknown key "triggers"`},
		{"no types", "other: 1\n", `unknown key "other"`},
		{"empty types", "types: {}\n", "must map type names"},
		{"definition not a map", "types: {task: 3}\n", "type task: the definition must be a map"},
	}
	for _, tt := range tests {
		_, err := parseApplyDocument([]byte(tt.doc), applySections[:1]) // what eddy types apply reads
		if err == nil || !strings.Contains(err.Error(), tt.want) || exitCode(err) != exitUsage {
			t.Errorf("%s: err = %v, want a usage error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestTokenSources(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.run(t, "put", "task", "t1", `{}`).ok(t)

	bogus := cliOptions{env: map[string]string{"EDDY_TOKEN": "eddy_bogus"}}
	s.runWith(t, bogus, "get", "task", "t1").fails(t, exitError, "error: unauthorized: ")
	// --token wins over EDDY_TOKEN.
	s.runWith(t, bogus, "--token", s.admin, "get", "task", "t1").ok(t)

	// No token anywhere.
	var stderr strings.Builder
	a := &app{stdout: io.Discard, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	code := a.run(context.Background(), []string{"--server", s.url, "--data", t.TempDir(), "get", "task", "t1"})
	if code != exitUsage || !strings.Contains(stderr.String(), "no token") {
		t.Fatalf("exit %d, stderr %q; want a usage error about the token", code, stderr.String())
	}

	// EDDY_SERVER is the default of --server.
	stderr.Reset()
	a = &app{stdout: io.Discard, stderr: &stderr, stdin: strings.NewReader(""),
		getenv: func(k string) string { return map[string]string{"EDDY_SERVER": s.url, "EDDY_TOKEN": s.admin}[k] }}
	if code := a.run(context.Background(), []string{"get", "task", "t1"}); code != exitOK {
		t.Fatalf("with EDDY_SERVER: exit %d, stderr %q", code, stderr.String())
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{usagef("x"), exitUsage},
		{&commandError{err: usagef("x")}, exitUsage},
		{&commandError{err: io.EOF}, exitError},
		{&commandError{err: context.Canceled}, exitInterrupted},
		{io.EOF, exitUsage}, // cobra's own parse errors
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// TestCompact: compact drops the whitespace of a JSON document and leaves
// what is not JSON as it is.
func TestCompact(t *testing.T) {
	t.Parallel()
	if got := string(compact([]byte(` { "b" : [1, 2] } `))); got != `{"b":[1,2]}` {
		t.Errorf("compact = %q", got)
	}
	if got := string(compact([]byte("not json"))); got != "not json" {
		t.Errorf("compact of not JSON = %q", got)
	}
}

// TestChangesAndLogStartAtTheHorizon checks that without --from/--after the
// CLI reads from where retained history starts, so a pruned space does not
// answer compacted.
func TestChangesAndLogStartAtTheHorizon(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, id := range []string{"a", "b", "c"} {
		s.run(t, "put", "task", id, `{"title":"x"}`).ok(t)
	}
	s.run(t, "prune", "--through", "2").ok(t)
	hasSeq := func(out string, n int) bool {
		return strings.Contains(out, fmt.Sprintf(`"seq": %d`, n)) || strings.Contains(out, fmt.Sprintf(`"seq":%d`, n))
	}
	out := s.run(t, "changes", "--json").ok(t).stdout
	if !hasSeq(out, 3) || hasSeq(out, 2) {
		t.Fatalf("changes after prune:\n%s", out)
	}
	out = s.run(t, "log").ok(t).stdout
	if !hasSeq(out, 3) || hasSeq(out, 2) {
		t.Fatalf("log after prune:\n%s", out)
	}
	s.run(t, "changes", "--from", "0").fails(t, exitError, "compacted")
}
