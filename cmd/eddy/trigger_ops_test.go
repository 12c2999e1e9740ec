package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/engine"
)

// engineOps is every CLI command of the trigger engine, with the
// arguments that pass the CLI's own checks.
var engineOps = [][]string{
	{"triggers", "enable", "on-task"},
	{"triggers", "enable", "on-task", "--skip"},
	{"triggers", "disable", "on-task"},
	{"triggers", "reset", "on-task"},
	{"triggers", "replay", "on-task", "--from", "0"},
	{"deliveries", "list", "--trigger", "on-task"},
	{"deliveries", "list", "--trigger", "on-task", "--status", "failed,parked", "--all"},
	{"deliveries", "retry", "dlv_1"},
	{"deliveries", "release", "dlv_1"},
	{"deliveries", "discard", "dlv_1"},
	{"deliveries", "bulk", "retry"},
	{"stances", "1"},
	{"fence", "1", "--triggers", "on-task", "--timeout", "1s"},
}

func TestEngineCommandsWithoutEngine(t *testing.T) {
	t.Parallel()
	s := newServer(t, false)
	doc := `functions:
  to-note: {kind: expr, writes: [note], code: 'nil'}
triggers:
  on-task:
    source: {changes: {types: [task]}}
    function: to-note
`
	s.runWith(t, cliOptions{stdin: doc}, "apply", "-f", "-").ok(t)
	s.run(t, "put", "task", "t1", `{"title": "x"}`).ok(t)
	for _, args := range engineOps {
		r := s.run(t, args...)
		if r.code != exitError || !strings.Contains(r.stderr, "error: unavailable: the trigger engine is not running") {
			t.Errorf("%v: exit %d, stderr %q, stdout %q", args, r.code, r.stderr, r.stdout)
		}
		if r.stdout != "" {
			t.Errorf("%v printed %q", args, r.stdout)
		}
	}
	// Without an engine, describe prints the definition alone.
	got := decodeOne[map[string]any](t, s.run(t, "triggers", "describe", "on-task").ok(t).stdout)
	if got["name"] != "on-task" || got["status"] != nil {
		t.Fatalf("triggers get = %v", got)
	}
	s.run(t, "deliveries", "list", "--trigger", "on-task", "--status", "done").fails(t, exitError, "error: bad_request: status: unknown delivery status")
}

func TestEngineCommandsUsage(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	usage := []struct {
		args []string
		want string
	}{
		{[]string{"triggers", "enable"}, "want 1 argument(s) (NAME)"},
		{[]string{"triggers", "disable", "a", "b"}, "want 1 argument(s) (NAME)"},
		{[]string{"triggers", "replay", "a"}, "missing --from N"},
		{[]string{"triggers", "replay", "a", "--from", "-1"}, "--from must not be negative"},
		{[]string{"triggers", "replay", "a", "--from", "x"}, "invalid argument"},
		{[]string{"deliveries", "list"}, "missing --trigger NAME"},
		{[]string{"deliveries", "list", "--trigger", "a", "--limit", "-1"}, "--limit must not be negative"},
		{[]string{"deliveries", "list", "x"}, `unknown command "x"`},
		{[]string{"deliveries", "retry"}, "want 1 argument(s) (ID)"},
		{[]string{"deliveries", "frob"}, `unknown command "frob"`},
		{[]string{"stances"}, "want 1 argument(s) (SEQ)"},
		{[]string{"stances", "0"}, `SEQ "0": want a row seq`},
		{[]string{"stances", "x"}, `SEQ "x": want a row seq`},
		{[]string{"fence"}, "want 1 argument(s) (SEQ)"},
		{[]string{"fence", "-1"}, "unknown shorthand flag"},
		{[]string{"fence", "x"}, `SEQ "x": want a seq`},
		{[]string{"fence", "1", "--timeout", "61s"}, "--timeout 1m1s: want a duration from 0s to 60s"},
		{[]string{"fence", "1", "--timeout", "-1s"}, "--timeout -1s"},
	}
	for _, u := range usage {
		r := s.run(t, u.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, u.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", u.args, r.code, r.stderr, exitUsage, u.want)
		}
	}
}

func TestPrintStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 4, 10, 0, 0, 0, time.UTC)
	raw := `{"trigger":"on-task","enabled":true,"cursor":1200,"start":3,"head":1250,"lag":50,
		"skipped":[{"lo":10,"hi":20},{"lo":40,"hi":45}],"owner":"host-1-abc","epoch":3,
		"leaseExpires":"2026-08-04T10:00:05Z","deliveries":{"succeeded":120,"failed":3,"pending":2,"parked":0},
		"oldestOpen":"2026-08-04T09:57:48Z"}`
	var st triggerStatus
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := printStatus(&b, st, now); err != nil {
		t.Fatal(err)
	}
	want := `trigger on-task: enabled
  position     cursor 1200, head 1250, lag 50 (start 3)
  skipped      10..20, 40..45
  lease        host-1-abc, epoch 3 (expires 2026-08-04T10:00:05Z)
  deliveries   pending 2, succeeded 120, failed 3
  oldest open  2026-08-04T09:57:48Z (2m12s ago)
`
	if b.String() != want {
		t.Errorf("printStatus:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := printStatus(&b, triggerStatus{Trigger: "tick", Epoch: 0}, now); err != nil {
		t.Fatal(err)
	}
	want = `trigger tick: disabled
  position    cursor 0, head 0, lag 0 (start 0)
  lease       none (epoch 0)
  deliveries  none
`
	if b.String() != want {
		t.Errorf("printStatus of a bare status:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestProgress(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := &progress{w: &b}
	p.show("a")
	p.show("a")
	p.show("b")
	p.end()
	if b.String() != "a\nb\n" {
		t.Errorf("plain progress = %q", b.String())
	}
	b.Reset()
	p = &progress{w: &b, live: true}
	p.end()
	p.show("a")
	p.show("a")
	p.show("b")
	p.end()
	if b.String() != "\r\x1b[Ka\r\x1b[Kb\n" {
		t.Errorf("live progress = %q", b.String())
	}
}

func TestTableLines(t *testing.T) {
	t.Parallel()
	next := time.Date(2026, 8, 4, 10, 0, 0, 0, time.UTC)
	d := deliveryInfo{ID: "dlv_1", Seq: 7, Status: "retrying", Attempts: 2, Depth: 1, LastError: "boom\nagain", NextAttemptAt: &next}
	d.Entity.Type, d.Entity.ID = "task", "t1"
	if got := deliveryLine(d); got != "dlv_1\t7\ttask/t1\tretrying\t2\t1\tboom again\t2026-08-04T10:00:00Z" {
		t.Errorf("deliveryLine = %q", got)
	}
	d.LastError, d.NextAttemptAt = "", nil
	if got := deliveryLine(d); !strings.HasSuffix(got, "\t-\t-") {
		t.Errorf("deliveryLine without error = %q", got)
	}
	var s stanceInfo
	if err := json.Unmarshal([]byte(`{"trigger":"a","stance":"matched","delivery":{"id":"dlv_1","status":"failed","attempts":5}}`), &s); err != nil {
		t.Fatal(err)
	}
	if got := stanceLine(s); got != "a\tmatched\tdlv_1\tfailed\t5\t-" {
		t.Errorf("stanceLine = %q", got)
	}
	if got := stanceLine(stanceInfo{Trigger: "b", Stance: "error", Error: "no such key"}); got != "b\terror\t-\t-\t-\tno such key" {
		t.Errorf("stanceLine of an error = %q", got)
	}
}

// newServer serves an eddy on SQLite in a temp dir, with its trigger
// engine (polling every 20ms) passed to the server when withEngine, else
// stopped and not passed.
func newServer(t *testing.T, withEngine bool) *testServer {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	e, err := eddy.Open(ctx, eddy.Config{DataDir: dir, NoEngine: !withEngine, Engine: engine.Options{Poll: 20 * time.Millisecond}})
	if err != nil {
		t.Fatalf("open eddy: %v", err)
	}
	secret, created, err := auth.BootstrapAdmin(ctx, e.Auth(), filepath.Join(dir, tokenFile))
	if err != nil || !created {
		t.Fatalf("bootstrap admin: created=%v err=%v", created, err)
	}
	cfg := serverConfig(e)
	cfg.Hub = e.Hub()
	if withEngine {
		cfg.Engine = e.Engine()
	}
	hs := serveAPI(t, cfg)
	t.Cleanup(func() {
		hs.Close()
		if err := e.Close(); err != nil {
			t.Errorf("close eddy: %v", err)
		}
	})
	return &testServer{url: hs.URL, dir: dir, admin: secret}
}

// head returns the space's head.
func (s *testServer) head(t *testing.T) int64 {
	t.Helper()
	sp := decodeOne[struct {
		Head int64 `json:"head"`
	}](t, s.run(t, "spaces", "get", "default").ok(t).stdout)
	return sp.Head
}

// engineDoc declares a trigger that succeeds and one that always fails.
const engineDoc = `functions:
  to-note: {kind: expr, writes: [note], code: 'put("note", entity.id, {"seq": row.seq})'}
  broken: {kind: expr, code: '1'}
triggers:
  on-task:
    source: {changes: {types: [task]}}
    function: to-note
  bad:
    source: {changes: {types: [task]}}
    function: broken
    delivery: {maxAttempts: 1}
`

// wantLines fails unless out holds every want, in order.
func wantLines(t *testing.T, what, out string, want ...string) {
	t.Helper()
	rest := out
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("%s: %q not found (in order) in:\n%s", what, w, out)
		}
		rest = rest[i+len(w):]
	}
}

func TestTriggerOpsCommands(t *testing.T) {
	t.Parallel()
	s := newServer(t, true)
	s.runWith(t, cliOptions{stdin: engineDoc}, "apply", "-f", "-").ok(t)
	s.run(t, "put", "task", "t1", `{"n": 1}`).ok(t)
	s.run(t, "put", "task", "t2", `{"n": 2}`).ok(t)
	// Once the task rows are handled, on-task has written its notes.
	written := strconv.FormatInt(s.head(t), 10)
	if r := s.run(t, "fence", written, "--timeout", "10s").ok(t); r.stdout != "seq "+written+": done\n" {
		t.Fatalf("fence printed %q", r.stdout)
	}
	head := s.head(t)
	s.run(t, "fence", strconv.FormatInt(head, 10), "--timeout", "10s").ok(t)

	out := s.run(t, "triggers", "describe", "on-task").ok(t).stdout
	wantLines(t, "triggers describe", out,
		"trigger on-task: enabled\n",
		"  position ", fmt.Sprintf(" cursor %d, head %d, lag 0 (start 0)\n", head, head),
		"  lease ", ", epoch 1 (expires ",
		"  deliveries ", " succeeded 2\n",
		"\ndefinition:\n{\n  \"name\": \"on-task\",")
	if strings.Contains(out, `"status"`) {
		t.Errorf("triggers describe shows the status key in the definition:\n%s", out)
	}
	got := decodeOne[map[string]any](t, s.run(t, "triggers", "get", "on-task", "--json").ok(t).stdout)
	if st, _ := got["status"].(map[string]any); got["name"] != "on-task" || st["cursor"] != float64(head) {
		t.Errorf("triggers get --json = %v", got)
	}

	pos := fmt.Sprintf("cursor %d, head %d, lag 0", head, head)
	if r := s.run(t, "triggers", "disable", "on-task").ok(t); r.stdout != "trigger on-task disabled: "+pos+"\n" {
		t.Errorf("disable printed %q", r.stdout)
	}
	if r := s.run(t, "triggers", "enable", "on-task", "--skip").ok(t); r.stdout != "trigger on-task enabled: "+pos+"\n" {
		t.Errorf("enable printed %q", r.stdout)
	}
	if r := s.run(t, "triggers", "reset", "on-task").ok(t); r.stdout != "trigger on-task reset: "+pos+"\n" {
		t.Errorf("reset printed %q", r.stdout)
	}
	st := decodeOne[map[string]any](t, s.run(t, "triggers", "disable", "bad", "--json").ok(t).stdout)
	if st["trigger"] != "bad" || st["enabled"] != false {
		t.Errorf("disable --json = %v", st)
	}

	// Replay waits until caught up.
	r := s.run(t, "triggers", "replay", "on-task", "--from", "0").ok(t)
	// The answer is the status right after the move, whatever the engine
	// did since: the first line's cursor is 0.
	wantLines(t, "replay", r.stdout,
		"trigger on-task replaying from 0: cursor 0, ",
		fmt.Sprintf("trigger on-task caught up: cursor %d, head %d, lag 0\n", head, head))
	if r.stderr != "" && !strings.HasPrefix(r.stderr, "replaying on-task: cursor ") {
		t.Errorf("replay progress = %q", r.stderr)
	}
	r = s.run(t, "triggers", "replay", "on-task", "--from", "1", "--no-wait").ok(t)
	if !strings.HasPrefix(r.stdout, "trigger on-task replaying from 1: cursor 1, ") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("replay --no-wait printed %q", r.stdout)
	}
	r = s.run(t, "triggers", "replay", "bad", "--from", "0").ok(t)
	wantLines(t, "replay of a disabled trigger", r.stdout, "trigger bad is disabled at cursor 0, ", ": the rows are evaluated once it is enabled\n")
	s.run(t, "triggers", "replay", "on-task", "--from", "999").fails(t, exitError, "error: bad_request: from: 999 is above the head")
	s.run(t, "triggers", "enable", "nope").fails(t, exitError, "error: not_found: ")
}

func TestDeliveriesCommands(t *testing.T) {
	t.Parallel()
	s := newServer(t, true)
	s.runWith(t, cliOptions{stdin: engineDoc}, "apply", "-f", "-").ok(t)
	for i := range 3 {
		s.run(t, "put", "task", fmt.Sprintf("t%d", i), `{"n": 1}`).ok(t)
	}
	s.run(t, "fence", strconv.FormatInt(s.head(t), 10), "--timeout", "10s").ok(t)

	rows := tableRows(s.run(t, "deliveries", "list", "--trigger", "on-task").ok(t).stdout)
	if len(rows) != 3 {
		t.Fatalf("deliveries list rows = %q", rows)
	}
	last := 0
	for i, row := range rows {
		f := strings.Fields(row)
		if len(f) != 8 {
			t.Fatalf("row %d = %q", i, row)
		}
		seq, _ := strconv.Atoi(f[1])
		if seq <= last {
			t.Errorf("row %d: seq %d after %d", i, seq, last)
		}
		last = seq
		if !strings.HasPrefix(f[0], "dlv_") || f[2] != fmt.Sprintf("task/t%d", i) ||
			f[3] != "succeeded" || f[4] != "1" || f[5] != "1" || f[6] != "-" || f[7] != "-" {
			t.Errorf("row %d = %q", i, row)
		}
	}
	r := s.run(t, "deliveries", "list", "--trigger", "on-task", "--limit", "2").ok(t)
	if len(tableRows(r.stdout)) != 2 || !strings.HasPrefix(r.stderr, "more: next page with --after ") {
		t.Errorf("one page: stdout %q stderr %q", r.stdout, r.stderr)
	}
	after := strings.Fields(strings.TrimPrefix(r.stderr, "more: next page with --after "))[0]
	if rows := tableRows(s.run(t, "deliveries", "list", "--trigger", "on-task", "--limit", "2", "--after", after).ok(t).stdout); len(rows) != 1 {
		t.Errorf("second page rows = %q", rows)
	}
	if rows := tableRows(s.run(t, "deliveries", "list", "--trigger", "on-task", "--limit", "1", "--all").ok(t).stdout); len(rows) != 3 {
		t.Errorf("--all rows = %q", rows)
	}
	pages := decodeAll[struct {
		Deliveries []map[string]any `json:"deliveries"`
		Next       string           `json:"next"`
	}](t, s.run(t, "deliveries", "list", "--trigger", "on-task", "--limit", "2", "--all", "--json").ok(t).stdout)
	if len(pages) != 2 || len(pages[0].Deliveries) != 2 || pages[0].Next == "" || len(pages[1].Deliveries) != 1 {
		t.Errorf("--json pages = %+v", pages)
	}
	if rows := tableRows(s.run(t, "deliveries", "list", "--trigger", "on-task", "--status", "failed,parked").ok(t).stdout); len(rows) != 0 {
		t.Errorf("failed or parked on-task rows = %q", rows)
	}

	failed := tableRows(s.run(t, "deliveries", "list", "--trigger", "bad", "--status", "failed").ok(t).stdout)
	if len(failed) != 3 || !strings.Contains(failed[0], " failed ") {
		t.Fatalf("failed rows = %q", failed)
	}
	id := strings.Fields(failed[0])[0]
	if r := s.run(t, "deliveries", "retry", id).ok(t); r.stdout != fmt.Sprintf("delivery %s: pending (attempts 0, seq 1, task/t0)\n", id) {
		t.Errorf("retry printed %q", r.stdout)
	}
	s.run(t, "fence", "1", "--triggers", "bad", "--timeout", "10s").ok(t)
	s.run(t, "deliveries", "release", id).fails(t, exitError, `error: conflict: cannot release delivery "`+id+`": it is failed`)
	d := decodeOne[map[string]any](t, s.run(t, "deliveries", "discard", id, "--json").ok(t).stdout)
	if d["id"] != id || d["status"] != "discarded" || d["attempts"] != float64(1) {
		t.Errorf("discard --json = %v", d)
	}
	s.run(t, "deliveries", "retry", id).fails(t, exitError, `details: {"status":"discarded"}`)
	s.run(t, "deliveries", "retry", "dlv_nope").fails(t, exitError, "error: not_found: ")
	s.run(t, "deliveries", "list", "--trigger", "nope").fails(t, exitError, "error: not_found: ")
}

func TestStancesAndFenceCommands(t *testing.T) {
	t.Parallel()
	s := newServer(t, true)
	s.runWith(t, cliOptions{stdin: engineDoc}, "apply", "-f", "-").ok(t)
	s.run(t, "put", "task", "t1", `{"n": 1}`).ok(t)
	s.run(t, "fence", "1", "--timeout", "10s").ok(t)

	rows := tableRows(s.run(t, "stances", "1").ok(t).stdout)
	if len(rows) != 2 {
		t.Fatalf("stances rows = %q", rows)
	}
	bad, onTask := strings.Fields(rows[0]), strings.Fields(rows[1])
	if len(bad) < 6 || bad[0] != "bad" || bad[1] != "matched" || bad[3] != "failed" || bad[4] != "1" || bad[5] != "-" {
		t.Errorf("bad stance = %q", rows[0])
	}
	if len(onTask) != 6 || onTask[0] != "on-task" || onTask[1] != "matched" || !strings.HasPrefix(onTask[2], "dlv_") || onTask[3] != "succeeded" || onTask[5] != "-" {
		t.Errorf("on-task stance = %q", rows[1])
	}
	ans := decodeOne[client.Stances](t, s.run(t, "stances", "1", "--json").ok(t).stdout)
	if ans.Seq != 1 || len(ans.Stances) != 2 || ans.Stances[1].Delivery == nil {
		t.Errorf("stances --json = %+v", ans)
	}
	s.run(t, "stances", "99").fails(t, exitError, "error: bad_request: seq: 99 is ahead of the head")

	s.run(t, "triggers", "disable", "on-task").ok(t)
	time.Sleep(200 * time.Millisecond) // the runner notices at its next lease round
	s.run(t, "put", "task", "t2", `{"n": 2}`).ok(t)
	head := strconv.FormatInt(s.head(t), 10)
	r := s.run(t, "fence", head, "--triggers", "on-task", "--timeout", "100ms")
	r.fails(t, exitError, "error: seq "+head+": not done after 100ms; waiting for on-task\n")
	if r.stdout != "" {
		t.Errorf("fence not done printed %q", r.stdout)
	}
	r = s.run(t, "fence", head, "--triggers", "on-task,bad", "--timeout", "100ms", "--json")
	if r.code != exitError {
		t.Errorf("fence --json not done: exit %d", r.code)
	}
	if res := decodeOne[fenceAnswer](t, r.stdout); res.Done || len(res.Waiting) != 1 || res.Waiting[0] != "on-task" {
		t.Errorf("fence --json = %+v", res)
	}
	s.run(t, "fence", head, "--timeout", "10s").ok(t) // every enabled trigger: bad alone
	s.run(t, "fence", head, "--triggers", "nope").fails(t, exitError, "error: not_found: ")
}
