package todo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"sigs.k8s.io/yaml"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/examples/todo/receiver/hook"
	"github.com/eddy-run/eddy/server"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// receiverURL is where eddy.yaml sends its webhooks; the test points
// them at an in-process receiver instead.
const receiverURL = "http://127.0.0.1:9000"

// wait bounds every wait of the test.
const wait = 15 * time.Second

// example is the todo example running in process: eddy, its HTTP API and
// the receiver, with eddy.yaml applied.
type example struct {
	eddy  *eddy.Eddy
	api   string // .../api/v1/spaces/default
	token string
	logs  *syncBuffer // the receiver's log
}

// The example end to end: a task moved to done gets completedAt from
// stamp-completed, the overdue sweep marks past-due tasks as the trigger
// (by a cron firing and by a manual run), and notify-on-change delivers
// every task write to the receiver.
func TestTodoExample(t *testing.T) {
	x := start(t)

	t.Run("stamp completed", x.stampCompleted)
	t.Run("overdue by run", x.overdueByRun)
	t.Run("overdue by cron", x.overdueByCron)
	t.Run("notify on change", x.notifyOnChange)
}

// start opens eddy on a temporary directory with a fast engine, serves
// its API and the receiver, and applies eddy.yaml.
func start(t *testing.T) *example {
	t.Helper()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	e, err := eddy.Open(ctx, eddy.Config{
		DataDir: t.TempDir(), Logger: logger,
		Engine: engine.Options{Poll: 50 * time.Millisecond, LeaseTTL: 2 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	_, token, err := e.Auth().Create(ctx, auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin, Actor: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.ServerConfig()
	cfg.Logger = logger
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(s.Handler())
	t.Cleanup(api.Close)

	doc := readExample(t)
	x := &example{eddy: e, api: api.URL + "/api/v1/spaces/default", token: token, logs: &syncBuffer{}}
	h, err := hook.New(hook.Config{
		Secret: secretOf(t, doc), Server: api.URL, Token: token, Logger: log.New(x.logs, "", 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	rcv := httptest.NewServer(h)
	t.Cleanup(rcv.Close)
	x.apply(t, doc, rcv.URL)
	return x
}

// document is eddy.yaml: per section, definitions by name.
type document map[string]map[string]map[string]any

func readExample(t *testing.T) document {
	t.Helper()
	raw, err := os.ReadFile("eddy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc document
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// secretOf returns the secret the example's webhooks share.
func secretOf(t *testing.T, doc document) string {
	t.Helper()
	a, b := doc["functions"]["mark-overdue"]["secret"], doc["functions"]["notify-hook"]["secret"]
	s, ok := a.(string)
	if !ok || a != b {
		t.Fatalf("the webhooks do not share one secret: %v, %v", a, b)
	}
	return s
}

// apply puts the document's types, functions and triggers in that order,
// names in order within each (as eddy apply does), with the webhooks
// pointed at receiver; a trigger saved with warnings fails the test.
func (x *example) apply(t *testing.T, doc document, receiver string) {
	t.Helper()
	for _, section := range []string{"types", "functions", "triggers"} {
		defs := doc[section]
		for _, name := range slices.Sorted(maps.Keys(defs)) {
			def := defs[name]
			if u, ok := def["url"].(string); ok {
				def["url"] = strings.Replace(u, receiverURL, receiver, 1)
			}
			var answer struct {
				Warnings []any `json:"warnings"`
			}
			x.decode(t, x.do(t, http.MethodPut, "/"+section+"/"+name, def, nil), &answer)
			if len(answer.Warnings) > 0 {
				t.Fatalf("%s %s: warnings %v", section, name, answer.Warnings)
			}
		}
	}
}

// stampCompleted moves a task todo → doing → done and checks that
// stamp-completed stamped completedAt, caused by the row that did it.
func (x *example) stampCompleted(t *testing.T) {
	x.write(t, http.MethodPut, "t1", `{"title": "write the docs"}`)
	x.write(t, http.MethodPatch, "t1", `{"status": "doing"}`)
	done := x.write(t, http.MethodPatch, "t1", `{"status": "done"}`)
	x.fence(t, done, "stamp-completed")

	rec := x.task(t, "t1")
	if rec.Properties["completedAt"] == nil || rec.Version <= done {
		t.Fatalf("t1 after done: %+v", rec)
	}
	x.authoredBy(t, rec.Version, "stamp-completed", done)
}

// overdueByRun runs mark-overdue once on a past-due task: the receiver
// gets the run's Eddy-Cause token and patches the task through the API,
// so the write is the run's delivery's (and the run itself returns no
// actions).
func (x *example) overdueByRun(t *testing.T) {
	seq := x.write(t, http.MethodPut, "t2", `{"title": "file the taxes", "dueAt": "2025-04-15T00:00:00Z"}`)
	var res struct {
		Receipts []json.RawMessage `json:"receipts"`
	}
	x.decode(t, x.do(t, http.MethodPost, "/triggers/mark-overdue/run", map[string]any{"entity": map[string]string{"type": "task", "id": "t2"}}, nil), &res)
	if len(res.Receipts) != 0 {
		t.Fatalf("run answered actions %s; want the Eddy-Cause write-back", res.Receipts)
	}
	rec := x.task(t, "t2")
	if rec.Properties["overdue"] != true {
		t.Fatalf("t2 after the run: %+v", rec)
	}
	x.authoredBy(t, rec.Version, "mark-overdue", seq)
}

// overdueByCron makes mark-overdue fire every second and checks that its
// first firing marks the past-due task (and only it) through the
// receiver's Eddy-Cause write-back.
func (x *example) overdueByCron(t *testing.T) {
	x.write(t, http.MethodPut, "t3", `{"title": "renew the passport", "dueAt": "2025-01-31T00:00:00Z"}`)
	x.write(t, http.MethodPut, "t4", `{"title": "plan the trip", "dueAt": "2999-01-01T00:00:00Z"}`)
	x.write(t, http.MethodPut, "t5", `{"title": "old but done", "dueAt": "2025-01-01T00:00:00Z"}`)
	x.write(t, http.MethodPatch, "t5", `{"status": "doing"}`)
	x.fence(t, x.write(t, http.MethodPatch, "t5", `{"status": "done"}`), "")

	fast := map[string]any{"source": map[string]any{"cron": map[string]any{"schedule": "@every 1s", "timezone": "UTC", "catchUp": "last"}}, "function": "mark-overdue"}
	x.do(t, http.MethodPut, "/triggers/mark-overdue", fast, nil)
	fire := x.firstDelivery(t, "mark-overdue")
	x.fence(t, fire.Seq, "mark-overdue")

	rec := x.task(t, "t3")
	if rec.Properties["overdue"] != true {
		t.Fatalf("t3 after the sweep: %+v", rec)
	}
	x.authoredBy(t, rec.Version, "mark-overdue", fire.Seq)
	for _, id := range []string{"t4", "t5"} {
		if rec := x.task(t, id); rec.Properties["overdue"] != nil {
			t.Errorf("%s marked overdue: %+v", id, rec)
		}
	}
	if !strings.Contains(x.logs.String(), "overdue "+fire.ID+": ") {
		t.Errorf("the receiver did not log the sweep %s:\n%s", fire.ID, x.logs)
	}
}

// notifyOnChange waits for notify-on-change to deliver every task row so
// far and checks that all its deliveries succeeded and were logged.
func (x *example) notifyOnChange(t *testing.T) {
	head := x.write(t, http.MethodPatch, "t4", `{"status": "doing"}`)
	x.fence(t, head, "notify-on-change")
	page, err := x.eddy.Engine().Deliveries(context.Background(), engine.DeliveryQuery{Space: "default", Trigger: "notify-on-change", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// t1: put, doing, done, stamp; t2 and t3: put, overdue; t4: put,
	// doing; t5: put, doing, done, stamp.
	if len(page.Deliveries) != 14 {
		t.Errorf("%d deliveries, want 14", len(page.Deliveries))
	}
	logs := x.logs.String()
	for _, d := range page.Deliveries {
		if d.Status != "succeeded" || d.Attempts != 1 {
			t.Errorf("delivery %+v", d)
		}
		if !strings.Contains(logs, "hook "+d.ID+": seq "+strconv.FormatInt(d.Seq, 10)+" ") {
			t.Errorf("delivery %s not logged", d.ID)
		}
	}
	if !strings.Contains(logs, "patch task/t1 by trigger:stamp-completed: changed completedAt\n") {
		t.Errorf("the stamp was not logged:\n%s", logs)
	}
}

// record is an entity as the API answers it.
type record struct {
	Version    int64          `json:"version"`
	Properties map[string]any `json:"properties"`
}

func (x *example) task(t *testing.T, id string) record {
	t.Helper()
	var r record
	x.decode(t, x.do(t, http.MethodGet, "/entities/task/"+id, nil, nil), &r)
	return r
}

// write puts or patches a task and returns the seq it appended.
func (x *example) write(t *testing.T, method, id, body string) int64 {
	t.Helper()
	ct := "application/json"
	if method == http.MethodPatch {
		ct = "application/merge-patch+json"
	}
	resp := x.do(t, method, "/entities/task/"+id, json.RawMessage(body), http.Header{"Content-Type": {ct}})
	seq, err := strconv.ParseInt(resp.Header.Get("Eddy-Seq"), 10, 64)
	if err != nil {
		t.Fatalf("%s %s: Eddy-Seq %q", method, id, resp.Header.Get("Eddy-Seq"))
	}
	return seq
}

// fence waits until trigger (every enabled one if "") has handled every
// row up to seq.
func (x *example) fence(t *testing.T, seq int64, trigger string) {
	t.Helper()
	var names []string
	if trigger != "" {
		names = []string{trigger}
	}
	res, err := x.eddy.Engine().Fence(context.Background(), "default", seq, names, wait)
	if err != nil || !res.Done {
		t.Fatalf("fence %d %v: %+v, %v", seq, names, res, err)
	}
}

// firstDelivery waits for the trigger's first delivery.
func (x *example) firstDelivery(t *testing.T, trigger string) engine.DeliveryInfo {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		page, err := x.eddy.Engine().Deliveries(context.Background(), engine.DeliveryQuery{Space: "default", Trigger: trigger, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Deliveries) > 0 {
			return page.Deliveries[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no delivery of %s after %s", trigger, wait)
	return engine.DeliveryInfo{}
}

// authoredBy checks that the row at seq was written by a delivery of
// trigger caused by the row at cause: its actor and its causal chain.
func (x *example) authoredBy(t *testing.T, seq int64, trigger string, cause int64) {
	t.Helper()
	var page struct {
		Changes []struct {
			Seq   int64  `json:"seq"`
			Actor string `json:"actor"`
		} `json:"changes"`
	}
	x.decode(t, x.do(t, http.MethodGet, fmt.Sprintf("/changes?from=%d&limit=1", seq-1), nil, nil), &page)
	if len(page.Changes) != 1 || page.Changes[0].Seq != seq || page.Changes[0].Actor != "trigger:"+trigger {
		t.Fatalf("row %d: %+v, want actor trigger:%s", seq, page.Changes, trigger)
	}
	var causes struct {
		Chain []struct {
			Seq     int64  `json:"seq"`
			Depth   int    `json:"depth"`
			Trigger string `json:"trigger"`
		} `json:"chain"`
	}
	x.decode(t, x.do(t, http.MethodGet, fmt.Sprintf("/changes/%d/causes", seq), nil, nil), &causes)
	c := causes.Chain
	if len(c) != 2 || c[0].Trigger != trigger || c[0].Depth != 1 || c[1].Seq != cause || c[1].Depth != 0 {
		t.Fatalf("causes of %d: %+v, want %s caused by %d", seq, c, trigger, cause)
	}
}

// do sends an API request with the admin token and fails the test unless
// it answers 2xx.
func (x *example) do(t *testing.T, method, path string, body any, h http.Header) *response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, x.api+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(req.Header, h)
	if req.Header.Get("Content-Type") == "" && body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+x.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s %s", method, path, resp.Status, raw)
	}
	return &response{Header: resp.Header, body: raw}
}

// response is a 2xx answer.
type response struct {
	Header http.Header
	body   []byte
}

func (x *example) decode(t *testing.T, r *response, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
