package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

func TestOutputFormats(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.run(t, "put", "task", "t1", `{"title": "<b>Tom & Jerry</b>"}`).ok(t)
	s.run(t, "put", "task", "t2", `{"title": "two"}`).ok(t)
	s.runWith(t, cliOptions{stdin: "functions:\n  stamp: {kind: expr, writes: [task], code: 'patch(\"task\", entity.id, {\"a\": 1})'}\n  hook: {kind: webhook, url: 'https://example.com/h?a=1&b=2'}\n"},
		"apply", "-f", "-").ok(t)

	// JSON output keeps <, > and & as they are.
	get := s.run(t, "get", "task", "t1").ok(t).stdout
	if !strings.Contains(get, `"<b>Tom & Jerry</b>"`) || strings.Contains(get, `\u003c`) {
		t.Fatalf("get prints HTML escapes:\n%s", get)
	}
	if out := s.run(t, "functions", "get", "hook", "-o", "json").ok(t).stdout; !strings.Contains(out, "?a=1&b=2") {
		t.Fatalf("functions get -o json:\n%s", out)
	}

	// -o yaml is the same document.
	y := s.run(t, "get", "task", "t1", "-o", "yaml").ok(t).stdout
	if !strings.Contains(y, "title: <b>Tom & Jerry</b>") || !strings.Contains(y, "id: t1") {
		t.Fatalf("get -o yaml:\n%s", y)
	}

	// -o name: kind/name per resource, for get and list alike.
	if out := s.run(t, "functions", "list", "-o", "name").ok(t).stdout; out != "function/hook\nfunction/stamp\n" {
		t.Fatalf("functions list -o name = %q", out)
	}
	if out := s.run(t, "functions", "get", "stamp", "-o", "name").ok(t).stdout; out != "function/stamp\n" {
		t.Fatalf("functions get -o name = %q", out)
	}
	if out := s.run(t, "list", "task", "-o", "name").ok(t).stdout; out != "entity/task/t1\nentity/task/t2\n" {
		t.Fatalf("list -o name = %q", out)
	}

	// -o jsonpath over the same shapes.
	if out := s.run(t, "list", "task", "-o", "jsonpath={.items[*].id}").ok(t).stdout; out != "t1 t2\n" {
		t.Fatalf("list -o jsonpath = %q", out)
	}
	if out := s.run(t, "functions", "list", "-o", `jsonpath={range .functions[*]}{.name}={.kind}{"\n"}{end}`).ok(t).stdout; out != "hook=webhook\nstamp=expr\n" {
		t.Fatalf("functions list -o jsonpath range = %q", out)
	}
	if out := s.run(t, "get", "task", "t2", "-o", "jsonpath=.properties.title").ok(t).stdout; out != "two\n" {
		t.Fatalf("get -o jsonpath without braces = %q", out)
	}

	// -o wide adds columns to the table; list -o json is one document.
	wide := tableRows(s.run(t, "functions", "list", "-o", "wide").ok(t).stdout)
	if len(wide) != 2 || !strings.Contains(s.run(t, "functions", "list", "-o", "wide").ok(t).stdout, "REGISTERED") {
		t.Fatalf("functions list -o wide:\n%v", wide)
	}
	var list struct {
		Items []record `json:"items"`
	}
	if err := json.Unmarshal([]byte(s.run(t, "list", "task", "-o", "json").ok(t).stdout), &list); err != nil || len(list.Items) != 2 {
		t.Fatalf("list -o json: %v %+v", err, list)
	}

	// A bad -o is a usage error.
	s.run(t, "get", "task", "t1", "-o", "xml").fails(t, exitUsage, `-o "xml": want json, yaml, wide, name or jsonpath=TEMPLATE`)
	s.run(t, "get", "task", "t1", "-o", "jsonpath={.a").fails(t, exitUsage, "unclosed {")
}

func TestJSONPath(t *testing.T) {
	t.Parallel()
	var doc any
	if err := json.Unmarshal([]byte(`{"items":[{"name":"a","n":1,"tags":["x","y"]},{"name":"b","n":2,"o":{"k-1":true}}],"head":7,"s":"<&>"}`), &doc); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tmpl, want string
	}{
		{"{.head}", "7"},
		{".head", "7"},
		{"{.s}", "<&>"},
		{"{.items[*].name}", "a b"},
		{"{.items[1].name}", "b"},
		{"{.items[-1].n}", "2"},
		{"{.items[0].tags}", `["x","y"]`},
		{"{.items[1].o['k-1']}", "true"},
		{"{.items[0].missing}", ""},
		{"head={.head}!", "head=7!"},
		{`{range .items[*]}{.name}:{.n}{"\n"}{end}`, "a:1\nb:2\n"},
		{"{$.items[0].name}", "a"},
		{"{.items[0].*}", `1 a ["x","y"]`},
	}
	for _, tt := range tests {
		p, err := parseJSONPath(tt.tmpl)
		if err != nil {
			t.Errorf("parse %q: %v", tt.tmpl, err)
			continue
		}
		got, err := p.render(doc)
		if err != nil || got != tt.want {
			t.Errorf("render %q = %q, %v; want %q", tt.tmpl, got, err, tt.want)
		}
	}
	for _, bad := range []string{"{.a", "{end}", "{range .a}", "{.a[}", "{.a[x]}", `{"unterminated}`, "{a}", "{..}"} {
		if _, err := parseJSONPath(bad); err == nil {
			t.Errorf("parse %q: no error", bad)
		}
	}
}

// FuzzJSONPath feeds arbitrary templates to the -o jsonpath parser and
// renders what it accepts: it never panics.
func FuzzJSONPath(f *testing.F) {
	for _, seed := range []string{"{.items[*].name}", `{range .a[*]}{.b}{"\n"}{end}`, ".a.b", "{.a['x'][0]}", "{", "{end}", "{.a[-9]}"} {
		f.Add(seed)
	}
	var doc any
	_ = json.Unmarshal([]byte(`{"a":[{"b":1,"x":[2]}],"items":[{"name":"n"}]}`), &doc)
	f.Fuzz(func(t *testing.T, tmpl string) {
		p, err := parseJSONPath(tmpl)
		if err != nil {
			return
		}
		if _, err := p.render(doc); err != nil {
			t.Fatalf("render %q: %v", tmpl, err)
		}
	})
}

func TestUnescapeHTML(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"a":"\u003cb\u003e \u0026"}`, `{"a":"<b> &"}`},
		{`{"a":"\\u003c"}`, `{"a":"\\u003c"}`}, // an escaped backslash, then text
		{`{"a":"\u00e9\u003e"}`, `{"a":"\u00e9>"}`},
		{`plain`, `plain`},
	}
	for _, tt := range tests {
		if got := string(unescapeHTML([]byte(tt.in))); got != tt.want {
			t.Errorf("unescapeHTML(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	if out := s.run(t, "--version").ok(t).stdout; out != "eddy "+buildVersion()+"\n" {
		t.Fatalf("--version = %q", out)
	}
	if out := s.run(t, "version").ok(t).stdout; !strings.HasPrefix(out, "eddy "+buildVersion()+" (go") {
		t.Fatalf("version = %q", out)
	}
	var v map[string]string
	if err := json.Unmarshal([]byte(s.run(t, "version", "-o", "json").ok(t).stdout), &v); err != nil || v["version"] == "" || v["go"] == "" {
		t.Fatalf("version -o json: %v %v", v, err)
	}

	tests := []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}, "dev-0123456789ab-dirty"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
	}
	for _, tt := range tests {
		if got := versionOf(&tt.bi); got != tt.want {
			t.Errorf("versionOf(%+v) = %q, want %q", tt.bi, got, tt.want)
		}
	}
}

func TestSpaceFromEnv(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.run(t, "spaces", "create", "team-a").ok(t)
	env := cliOptions{env: map[string]string{"EDDY_SPACE": "team-a"}}
	s.runWith(t, env, "put", "task", "t1", `{"title": "a"}`).ok(t)
	s.run(t, "--space", "team-a", "get", "task", "t1").ok(t)
	s.run(t, "get", "task", "t1").fails(t, exitError, "error: not_found: ")
	// --space wins over EDDY_SPACE.
	s.runWith(t, env, "--space", "default", "get", "task", "t1").fails(t, exitError, "error: not_found: ")
}

func TestErrorsNameTheTokenSource(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.runWith(t, cliOptions{env: map[string]string{"EDDY_TOKEN": "bogus"}}, "get", "task", "t1").
		fails(t, exitError, "(token from EDDY_TOKEN)")
	s.run(t, "--token", "bogus", "get", "task", "t1").fails(t, exitError, "error: unauthorized: ")
	s.run(t, "--token", "bogus", "get", "task", "t1").fails(t, exitError, "(token from --token)")

	// A reader token read from a file: forbidden names the file.
	tok := decodeOne[struct {
		Token string `json:"token"`
	}](t, s.run(t, "tokens", "create", "--role", "reader", "--json").ok(t).stdout).Token
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/"+tokenFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	a := &app{stdout: &out, stderr: &out, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	code := a.run(context.Background(), []string{"--server", s.url, "--data", dir, "put", "task", "t1", `{}`})
	if code != exitError || !strings.Contains(out.String(), "error: forbidden: ") || !strings.Contains(out.String(), "(token from "+dir+"/"+tokenFile+")") {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
}

// page answers one scripted changes page.
func page(rows []int64, cursor string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		var parts []string
		for _, seq := range rows {
			parts = append(parts, fmt.Sprintf(`{"seq":%d,"ts":"2026-12-01T10:00:00Z","actor":"owner","op":"put","entityId":"n%d","type":"note","payload":{}}`, seq, seq))
		}
		fmt.Fprintf(w, `{"changes":[%s]%s}`, strings.Join(parts, ","), cursor)
	}
}

func TestHistoryPagesPastShortFilteredPages(t *testing.T) {
	t.Parallel()
	// The server's scans are bounded: filtered pages come back short,
	// even empty, until the log ends.
	f, base := newFakeWatch(t, 9,
		page([]int64{9}, `,"cursor":8`),
		page(nil, `,"cursor":5`),
		page([]int64{4, 3}, `,"cursor":3`),
	)
	var stdout, stderr syncBuffer
	if code := runWatch(context.Background(), base, &stdout, &stderr, "history", "--types", "note", "--limit", "3"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if rows := tableRows(stdout.String()); len(rows) != 3 || !strings.HasPrefix(rows[2], "3 ") {
		t.Fatalf("rows:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "more: next page with --before 3") {
		t.Fatalf("stderr %q", stderr.String())
	}
	var got []string
	for _, q := range f.requests() {
		got = append(got, q.Get("before")+"/"+q.Get("limit"))
	}
	if fmt.Sprint(got) != "[0/3 8/2 5/2]" {
		t.Fatalf("requests (before/limit) = %v", got)
	}

	// The walk ends with the log, short of --limit.
	_, base = newFakeWatch(t, 9, page([]int64{9}, `,"cursor":8`), page(nil, ""))
	stdout, stderr = syncBuffer{}, syncBuffer{}
	if code := runWatch(context.Background(), base, &stdout, &stderr, "history", "--types", "note", "--limit", "3"); code != exitOK || stderr.String() != "" {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if rows := tableRows(stdout.String()); len(rows) != 1 {
		t.Fatalf("rows:\n%s", stdout.String())
	}
}

func TestChangesPagesPastShortFilteredPages(t *testing.T) {
	t.Parallel()
	f, base := newFakeWatch(t, 9,
		page(nil, `,"cursor":4`),
		page([]int64{6}, `,"cursor":7`),
		page([]int64{8}, `,"cursor":8`),
	)
	var stdout, stderr syncBuffer
	if code := runWatch(context.Background(), base, &stdout, &stderr, "changes", "--from", "0", "--types", "note", "--limit", "2", "-o", "jsonpath={.changes[*].seq}"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stdout.String() != "6 8\n" || !strings.Contains(stderr.String(), "more: next page with --from 8") {
		t.Fatalf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
	var got []string
	for _, q := range f.requests() {
		got = append(got, q.Get("from")+"/"+q.Get("limit"))
	}
	if fmt.Sprint(got) != "[0/2 4/2 7/1]" {
		t.Fatalf("requests (from/limit) = %v", got)
	}
}

// TestJQ: --jq filters the JSON output of every command that prints a
// resource like gh's --jq: a result a line, strings raw, anything else
// compact JSON; it combines with -o json only, and a bad expression fails
// before the command writes anything.
func TestJQ(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.run(t, "put", "task", "t1", `{"title": "<b>Tom & Jerry</b>", "n": 1}`).ok(t)
	s.run(t, "put", "task", "t2", `{"title": "two", "n": 2}`).ok(t)
	s.runWith(t, cliOptions{stdin: "functions:\n  stamp: {kind: expr, writes: [task], code: 'patch(\"task\", entity.id, {\"a\": 1})'}\n"}, "apply", "-f", "-").ok(t)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "task", "t1", "--jq", ".properties.title"}, "<b>Tom & Jerry</b>\n"},
		{[]string{"get", "task", "t1", "--jq", ".properties"}, `{"n":1,"title":"<b>Tom & Jerry</b>"}` + "\n"},
		{[]string{"list", "task", "--jq", ".items[].id"}, "t1\nt2\n"},
		{[]string{"list", "task", "--jq", "[.items[].properties.n] | add"}, "3\n"},
		{[]string{"functions", "list", "--jq", ".functions[] | [.name, .kind]"}, `["stamp","expr"]` + "\n"},
		{[]string{"functions", "get", "stamp", "-o", "json", "--jq", ".writes[0]"}, "task\n"},
		{[]string{"history", "--types", "task", "--jq", ".changes | length"}, "2\n"},
		{[]string{"put", "task", "t3", `{"title": "three"}`, "--jq", ".entity.version"}, "3\n"},
		{[]string{"version", "--jq", ".version"}, buildVersion() + "\n"},
	} {
		if got := s.run(t, c.args...).ok(t).stdout; got != c.want {
			t.Errorf("%v printed %q, want %q", c.args, got, c.want)
		}
	}
	s.run(t, "functions", "list", "-o", "yaml", "--jq", ".").fails(t, exitUsage, "--jq works on the JSON output: drop -o yaml")
	s.run(t, "put", "task", "t9", `{"title": "nine"}`, "--jq", ".[").fails(t, exitUsage, "--jq: ")
	s.run(t, "get", "task", "t9").fails(t, exitError, "not_found")
	s.run(t, "get", "task", "t1", "--jq", ".properties.title | error").fails(t, exitError, "--jq: ")

	// Streams have no one document to format.
	for _, args := range [][]string{{"watch", "--jq", ".id"}, {"views", "watch", "v", "--cursor", "c", "-o", "json"}, {"sync", "v", "--db", "x.db", "-o", "yaml"}} {
		s.run(t, args...).fails(t, exitUsage, "streams without end, so -o and --jq do not apply: --json prints its ndjson lines")
	}
}
