package hook_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/examples/todo/receiver/hook"
	"github.com/eddy-run/eddy/functions"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const secret = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// signed returns a POST of body to path signed with key at ts.
func signed(t *testing.T, path, key string, ts time.Time, body string) *http.Request {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if err := functions.SetHeaders(r.Header, key, "dlv_test", ts, []byte(body)); err != nil {
		t.Fatal(err)
	}
	return r
}

// newHandler builds a receiver against the eddy API at server, logging
// into logs.
func newHandler(t *testing.T, server string, logs io.Writer) http.Handler {
	t.Helper()
	h, err := hook.New(hook.Config{
		Secret: secret, Server: server, Token: "tok",
		Logger: log.New(logs, "", 0), Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestNewRefusesABadSecret(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "secret", "whsec_!!"} {
		if _, err := hook.New(hook.Config{Secret: s}); err == nil {
			t.Errorf("New(secret %q) succeeded", s)
		}
	}
}

func TestSignatureRejected(t *testing.T) {
	t.Parallel()
	body := `{"delivery": "dlv_test", "row": {"seq": 1, "op": "put", "type": "task", "entityId": "t1"}}`
	unsigned := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body))
	tampered := signed(t, "/hook", secret, time.Now(), body)
	tampered.Body = io.NopCloser(strings.NewReader(strings.Replace(body, "t1", "t2", 1)))
	cases := map[string]*http.Request{
		"unsigned":       unsigned,
		"other secret":   signed(t, "/hook", "whsec_b3RoZXIga2V5", time.Now(), body),
		"tampered body":  tampered,
		"stale":          signed(t, "/hook", secret, time.Now().Add(-time.Hour), body),
		"overdue, other": signed(t, "/overdue", "whsec_b3RoZXIga2V5", time.Now(), body),
	}
	h := newHandler(t, "http://127.0.0.1:1", io.Discard) // /overdue must refuse before calling eddy
	for name, r := range cases {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, w.Code)
		}
	}
}

func TestHookLogsADelivery(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	h := newHandler(t, "", &logs)
	body := `{"delivery": "dlv_1", "row": {"seq": 3, "actor": "owner", "op": "patch", "type": "task", "entityId": "t1",
	  "payload": {"properties": ["status"], "state": {"status": "done"}}}, "entity": null, "before": null}`
	w := httptest.NewRecorder()
	h.ServeHTTP(w, signed(t, "/hook", secret, time.Now(), body))
	if w.Code != http.StatusNoContent {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	want := "hook dlv_1: seq 3 patch task/t1 by owner: changed status; status → done\n"
	if logs.String() != want {
		t.Fatalf("logged %q, want %q", logs.String(), want)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	row := hook.Row{Seq: 1, Actor: "owner", Op: "put", Type: "task", EntityID: "t1"}
	created := row
	created.Payload = hook.Payload{Created: true, Properties: []string{"dueAt", "title"}, State: map[string]string{"status": "todo"}}
	deleted := row
	deleted.Op, deleted.Payload = "delete", hook.Payload{Deleted: true}
	for _, c := range []struct {
		row  hook.Row
		want string
	}{
		{row, "hook d: seq 1 put task/t1 by owner"},
		{created, "hook d: seq 1 put task/t1 by owner: created; changed dueAt, title; status → todo"},
		{deleted, "hook d: seq 1 delete task/t1 by owner: deleted"},
	} {
		if got := hook.Describe(hook.Delivery{Delivery: "d", Row: c.row}); got != c.want {
			t.Errorf("Describe = %q, want %q", got, c.want)
		}
	}
}

func task(id string, version int64, status, dueAt string, overdue bool) hook.Task {
	return hook.Task{ID: id, Version: version, Properties: hook.Properties{Title: id, Status: status, DueAt: dueAt, Overdue: overdue}}
}

func TestOverdue(t *testing.T) {
	t.Parallel()
	tasks := []hook.Task{
		task("late", 1, "todo", "2026-02-28T00:00:00Z", false),
		task("late-doing", 2, "doing", "2026-03-01T11:59:59.5+00:00", false),
		task("future", 3, "todo", "2026-03-02T00:00:00Z", false),
		task("exactly-now", 4, "todo", "2026-03-01T12:00:00Z", false),
		task("done", 5, "done", "2026-02-01T00:00:00Z", false),
		task("marked", 6, "todo", "2026-02-01T00:00:00Z", true),
		task("no-due", 7, "todo", "", false),
		task("bad-due", 8, "todo", "yesterday", false),
	}
	var got []string
	for _, tk := range hook.Overdue(tasks, now) {
		got = append(got, tk.ID)
	}
	if strings.Join(got, ",") != "late,late-doing" {
		t.Fatalf("Overdue = %v, want [late late-doing]", got)
	}
}

// fakeEddy serves the task list in pages of two and records PATCHes; a
// PATCH of the task "racy" is refused with 412.
type fakeEddy struct {
	tasks []hook.Task

	mu      sync.Mutex
	patches []*http.Request
	bodies  []string
}

func (f *fakeEddy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer tok" {
		http.Error(w, "no token", http.StatusUnauthorized)
		return
	}
	const base = "/api/v1/spaces/default/entities/task"
	switch {
	case r.Method == http.MethodGet && r.URL.Path == base:
		f.list(w, r)
	case r.Method == http.MethodPatch && strings.HasPrefix(r.URL.Path, base+"/"):
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.patches, f.bodies = append(f.patches, r), append(f.bodies, string(b))
		f.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/racy") {
			http.Error(w, "precondition failed", http.StatusPreconditionFailed)
			return
		}
		w.WriteHeader(http.StatusOK)
	default:
		http.NotFound(w, r)
	}
}

// list answers a page of two tasks starting after the index in "after".
func (f *fakeEddy) list(w http.ResponseWriter, r *http.Request) {
	start := 0
	if a := r.URL.Query().Get("after"); a != "" {
		start = int(a[0] - '0')
	}
	end := min(start+2, len(f.tasks))
	page := map[string]any{"items": f.tasks[start:end], "head": 42}
	if end < len(f.tasks) {
		page["next"] = string(rune('0' + end))
	}
	_ = json.NewEncoder(w).Encode(page)
}

func newFake(t *testing.T) (*fakeEddy, *httptest.Server) {
	t.Helper()
	f := &fakeEddy{tasks: []hook.Task{
		task("a", 10, "todo", "2026-02-01T00:00:00Z", false),
		task("b", 11, "done", "2026-02-01T00:00:00Z", false),
		task("c", 12, "todo", "2026-04-01T00:00:00Z", false),
		task("d", 13, "doing", "2026-02-01T00:00:00Z", true),
		task("racy", 14, "doing", "2026-02-01T00:00:00Z", false),
	}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func sweep(t *testing.T, h http.Handler, cause string) (int, hook.Sweep) {
	t.Helper()
	r := signed(t, "/overdue", secret, time.Now(), `{"delivery": "fire_1", "row": {"op": "fire"}}`)
	if cause != "" {
		r.Header.Set("Eddy-Cause", cause)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var res hook.Sweep
	if w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
			t.Fatalf("answer %s: %v", w.Body, err)
		}
	}
	return w.Code, res
}

func TestSweepWritesBackWithTheCause(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	code, res := sweep(t, newHandler(t, srv.URL, io.Discard), "cause-token")
	if code != http.StatusOK || res.Checked != 5 || strings.Join(res.Marked, ",") != "a" ||
		strings.Join(res.Skipped, ",") != "racy" || res.Actions != nil {
		t.Fatalf("sweep = %d %+v", code, res)
	}
	if len(f.patches) != 2 {
		t.Fatalf("%d patches, want 2 (a and racy)", len(f.patches))
	}
	p := f.patches[0]
	if p.URL.Path != "/api/v1/spaces/default/entities/task/a" || p.Header.Get("Eddy-Cause") != "cause-token" ||
		p.Header.Get("If-Match") != "10" || p.Header.Get("Content-Type") != "application/merge-patch+json" ||
		f.bodies[0] != `{"overdue": true}` {
		t.Fatalf("patch %s %v %s", p.URL.Path, p.Header, f.bodies[0])
	}
}

func TestSweepWithoutCauseAnswersActions(t *testing.T) {
	t.Parallel()
	f, srv := newFake(t)
	code, res := sweep(t, newHandler(t, srv.URL, io.Discard), "")
	if code != http.StatusOK || len(f.patches) != 0 || len(res.Actions) != 2 {
		t.Fatalf("sweep = %d %+v, %d patches", code, res, len(f.patches))
	}
	a := res.Actions[0]
	if a.Op != "patch" || a.Type != "task" || a.EntityID != "a" || string(a.Patch) != `{"overdue":true}` {
		t.Fatalf("action = %+v", a)
	}
}

func TestSweepFailsWhenEddyFails(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	if code, _ := sweep(t, newHandler(t, srv.URL, io.Discard), "cause"); code != http.StatusBadGateway {
		t.Fatalf("status %d, want 502 (so that eddy retries)", code)
	}
}
