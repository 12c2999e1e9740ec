package definitions

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is the fixed clock of test services.
var clock = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// drivers open a fresh, migrated store for one test.
var drivers = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"sqlite", func(t *testing.T) store.Store {
		t.Helper()
		st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "eddy.db"))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
	{"postgres", func(t *testing.T) store.Store {
		t.Helper()
		st, err := postgres.Open(context.Background(), pgtest.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
}

// fixture is one test's service over a real log with the space "s".
type fixture struct {
	t   *testing.T
	log *changelog.Log
	svc *Service
	// handlers are the Go handlers the service sees.
	handlers *functions.Registry
}

// forEachDriver runs fn once per driver, in parallel subtests.
func forEachDriver(t *testing.T, fn func(f *fixture)) {
	t.Helper()
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			st := d.open(t)
			t.Cleanup(func() { _ = st.Close() })
			if err := st.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			lg := changelog.New(st, changelog.Options{})
			t.Cleanup(func() { _ = lg.Close() })
			if _, err := lg.EnsureSpace(context.Background(), "s"); err != nil {
				t.Fatal(err)
			}
			handlers := &functions.Registry{}
			now := func() time.Time { return clock }
			eng := engine.New(lg, handlers, engine.Options{Now: now})
			t.Cleanup(func() { _ = eng.Stop(context.Background()) })
			svc := New(lg, Options{Now: now, Handlers: handlers, Executor: eng})
			fn(&fixture{t: t, log: lg, svc: svc, handlers: handlers})
		})
	}
}

// write applies mutations to space s and returns the last seq.
func (f *fixture) write(ms ...changelog.Mutation) int64 {
	f.t.Helper()
	res, err := f.log.Write(context.Background(), changelog.WriteRequest{
		Space: "s", Mutations: ms, Provenance: store.Provenance{Actor: "owner", Via: "test"},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, r := range res.Receipts {
		if r.Status != store.ReceiptApplied {
			f.t.Fatalf("receipt %+v", r)
		}
	}
	return res.LastSeq
}

func (f *fixture) putFunction(name, body string) {
	f.t.Helper()
	if _, _, err := f.svc.PutFunction(context.Background(), "s", name, []byte(body)); err != nil {
		f.t.Fatalf("put function %s: %v", name, err)
	}
}

func (f *fixture) putTrigger(name, body string) SavedTrigger {
	f.t.Helper()
	saved, _, err := f.svc.PutTrigger(context.Background(), "s", name, []byte(body))
	if err != nil {
		f.t.Fatalf("put trigger %s: %v", name, err)
	}
	return saved
}

// wantProblem fails unless err is a *problem.Error with code and, if
// field is set, details.field == field.
func wantProblem(t *testing.T, err error, code, field string) *problem.Error {
	t.Helper()
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != code {
		t.Fatalf("err = %v, want a %s problem", err, code)
	}
	if field != "" && pe.Details["field"] != field {
		t.Fatalf("details.field = %v, want %q (%v)", pe.Details["field"], field, pe)
	}
	return pe
}

func TestFunctions(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(f *fixture) {
		t := f.t
		ctx := context.Background()
		secret := "whsec_" + strings.Repeat("QUJD", 8)
		fn, created, err := f.svc.PutFunction(ctx, "s", "hook", []byte(`{"kind": "webhook", "url": "http://127.0.0.1:9000/hook", "secret": "`+secret+`"}`))
		if err != nil || !created || fn.Secret != secret {
			t.Fatalf("put: created=%v err=%v fn=%+v", created, err, fn)
		}
		_, created, err = f.svc.PutFunction(ctx, "s", "hook", []byte(`{"kind": "webhook", "url": "http://127.0.0.1:9000/other", "writes": ["task"]}`))
		if err != nil || created {
			t.Fatalf("replace: created=%v err=%v", created, err)
		}
		f.putFunction("stamp", `{"kind": "expr", "writes": ["task"], "code": "patch(\"task\", entity.id, {\"at\": now})"}`)

		got, err := f.svc.Function(ctx, "s", "hook")
		if err != nil || got.URL != "http://127.0.0.1:9000/other" || got.Secret != "" || !slices.Equal(got.Writes, []string{"task"}) {
			t.Fatalf("get = %+v, %v", got, err)
		}
		all, err := f.svc.Functions(ctx, "s")
		if err != nil || len(all) != 2 || all[0].Name != "hook" || all[1].Name != "stamp" || all[1].Program() == nil {
			t.Fatalf("list = %v, %v", all, err)
		}

		_, _, err = f.svc.PutFunction(ctx, "s", "bad", []byte(`{"kind": "expr", "code": "patch(\"task\",\n  nope, {})"}`))
		pe := wantProblem(t, err, problem.BadRequest, "code")
		if pos, _ := pe.Details["position"].(map[string]int); pos["line"] != 2 {
			t.Errorf("position = %v, want line 2", pe.Details["position"])
		}
		_, err = f.svc.Function(ctx, "s", "bad")
		wantProblem(t, err, problem.NotFound, "")
		_, err = f.svc.Function(ctx, "s", "Bad!")
		wantProblem(t, err, problem.BadRequest, "")
		_, err = f.svc.Functions(ctx, "nowhere")
		wantProblem(t, err, problem.NotFound, "")
		_, _, err = f.svc.PutFunction(ctx, "nowhere", "x", []byte(`{"kind": "go", "handler": "h"}`))
		wantProblem(t, err, problem.NotFound, "")
	})
}

func TestDeleteFunctionInUse(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(f *fixture) {
		t := f.t
		ctx := context.Background()
		f.putFunction("stamp", `{"kind": "go", "handler": "stamp"}`)
		f.putTrigger("b", `{"source": {"changes": {}}, "function": "stamp"}`)
		f.putTrigger("a", `{"source": {"cron": {"schedule": "@every 1m"}}, "function": "stamp"}`)

		pe := wantProblem(t, f.svc.DeleteFunction(ctx, "s", "stamp"), problem.Conflict, "")
		if users, _ := pe.Details["triggers"].([]string); !slices.Equal(users, []string{"a", "b"}) {
			t.Fatalf("details.triggers = %v", pe.Details["triggers"])
		}
		for _, name := range []string{"a", "b"} {
			if err := f.svc.DeleteTrigger(ctx, "s", name); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.svc.DeleteFunction(ctx, "s", "stamp"); err != nil {
			t.Fatal(err)
		}
		wantProblem(t, f.svc.DeleteFunction(ctx, "s", "stamp"), problem.NotFound, "")
		wantProblem(t, f.svc.DeleteTrigger(ctx, "s", "a"), problem.NotFound, "")
	})
}

func TestPutTrigger(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(f *fixture) {
		t := f.t
		ctx := context.Background()
		_, _, err := f.svc.PutTrigger(ctx, "s", "t", []byte(`{"source": {"changes": {}}, "function": "missing"}`))
		wantProblem(t, err, problem.BadRequest, "function")
		_, _, err = f.svc.PutTrigger(ctx, "s", "t", []byte(`{"source": {"changes": {"when": "row.op =="}}, "function": "missing"}`))
		wantProblem(t, err, problem.BadRequest, "source.changes.when")

		f.putFunction("to-note", `{"kind": "expr", "writes": ["note"], "code": "nil"}`)
		f.putFunction("to-task", `{"kind": "expr", "writes": ["task"], "code": "nil"}`)
		saved, created, err := f.svc.PutTrigger(ctx, "s", "on-task", []byte(`{"source": {"changes": {"types": ["task"]}}, "function": "to-note"}`))
		if err != nil || !created || len(saved.Warnings) != 0 {
			t.Fatalf("put on-task: %+v created=%v err=%v", saved, created, err)
		}
		saved = f.putTrigger("on-note", `{"source": {"changes": {"types": ["note"]}}, "function": "to-task"}`)
		if len(saved.Warnings) != 1 || !slices.Equal(saved.Warnings[0].Cycle, []string{"on-note", "on-task", "on-note"}) {
			t.Fatalf("warnings = %+v", saved.Warnings)
		}
		// Replacing the trigger is judged on its new definition.
		saved, created, err = f.svc.PutTrigger(ctx, "s", "on-note", []byte(`{"source": {"changes": {"types": ["note"], "ops": ["fire"]}}, "function": "to-task"}`))
		if err != nil || created || len(saved.Warnings) != 0 {
			t.Fatalf("replace: %+v created=%v err=%v", saved, created, err)
		}

		b, err := json.Marshal(saved)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if ws, ok := m["warnings"].([]any); !ok || len(ws) != 0 || m["name"] != "on-note" || m["function"] != "to-task" {
			t.Fatalf("saved JSON = %s", b)
		}

		got, err := f.svc.Trigger(ctx, "s", "on-note")
		if err != nil || !slices.Equal(got.Source.Changes.Ops, []string{"fire"}) {
			t.Fatalf("get = %+v, %v", got, err)
		}
		ts, err := f.svc.Triggers(ctx, "s")
		if err != nil || len(ts) != 2 || ts[0].Name != "on-note" || ts[1].Name != "on-task" {
			t.Fatalf("list = %v, %v", ts, err)
		}
		_, err = f.svc.Trigger(ctx, "s", "none")
		wantProblem(t, err, problem.NotFound, "")
	})
}

func TestTestFunction(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(f *fixture) {
		t := f.t
		ctx := context.Background()
		f.write(changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: "t1", Properties: json.RawMessage(`{"status": "todo"}`)})
		seq := f.write(changelog.Mutation{Op: changelog.OpPatch, Type: "task", EntityID: "t1", Patch: json.RawMessage(`{"status": "done"}`)})
		f.putFunction("stamp", `{"kind": "expr", "writes": ["task"],
			"code": "before.properties.status != entity.properties.status ? patch(\"task\", entity.id, {\"completedAt\": now, \"by\": trigger}) : nil"}`)

		res, err := f.svc.TestFunction(ctx, "s", "stamp", TestParams{Seq: seq, Trigger: "done"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Kind != "expr" || res.Seq != seq || len(res.Actions) != 1 || res.Request != nil {
			t.Fatalf("result = %+v", res)
		}
		a := res.Actions[0]
		if a.Op != changelog.OpPatch || a.EntityID != "t1" || string(a.Patch) != `{"by":"done","completedAt":"2026-03-01T12:00:00Z"}` {
			t.Fatalf("action = %+v (patch %s)", a, a.Patch)
		}
		// On the creation, before is null: the program fails at its
		// position.
		_, err = f.svc.TestFunction(ctx, "s", "stamp", TestParams{Seq: 1})
		pe := wantProblem(t, err, problem.Unprocessable, "")
		if pe.Details["position"] == nil {
			t.Errorf("no position in %v", pe)
		}

		f.putFunction("other", `{"kind": "expr", "writes": ["note"], "code": "delete(\"task\", entity.id)"}`)
		_, err = f.svc.TestFunction(ctx, "s", "other", TestParams{Seq: seq})
		pe = wantProblem(t, err, problem.Unprocessable, "")
		if !strings.Contains(pe.Message, "undeclared") {
			t.Errorf("message = %q", pe.Message)
		}
		f.putFunction("quiet", `{"kind": "expr", "code": "nil"}`)
		res, err = f.svc.TestFunction(ctx, "s", "quiet", TestParams{Seq: seq})
		if err != nil || res.Actions == nil || len(res.Actions) != 0 {
			t.Fatalf("quiet = %+v, %v", res, err)
		}

		for _, bad := range []int64{0, -1, seq + 1} {
			_, err = f.svc.TestFunction(ctx, "s", "stamp", TestParams{Seq: bad})
			wantProblem(t, err, problem.BadRequest, "seq")
		}
		_, err = f.svc.TestFunction(ctx, "s", "stamp", TestParams{Seq: seq, Trigger: "Bad Name"})
		wantProblem(t, err, problem.BadRequest, "trigger")
		_, err = f.svc.TestFunction(ctx, "s", "missing", TestParams{Seq: seq})
		wantProblem(t, err, problem.NotFound, "")

		if _, err := f.log.Prune(ctx, "s", 1); err != nil {
			t.Fatal(err)
		}
		_, err = f.svc.TestFunction(ctx, "s", "stamp", TestParams{Seq: 1})
		var hu *changelog.HistoryUnavailableError
		if !errors.As(err, &hu) || hu.Horizon != 1 {
			t.Fatalf("pruned seq: err = %v", err)
		}
	})
}

func TestTestWebhook(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(f *fixture) {
		t := f.t
		seq := f.write(changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: "t1", Properties: json.RawMessage(`{"n": 1}`)})
		secret := "whsec_" + strings.Repeat("QUJD", 8)
		f.putFunction("hook", `{"kind": "webhook", "url": "http://127.0.0.1:9000/hook", "secret": "`+secret+`"}`)
		res, err := f.svc.TestFunction(context.Background(), "s", "hook", TestParams{Seq: seq})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Request
		if r == nil || r.Method != http.MethodPost || r.URL != "http://127.0.0.1:9000/hook" || res.Actions != nil {
			t.Fatalf("result = %+v", res)
		}
		wantHeaders := map[string]string{
			"content-type":      "application/json",
			"webhook-id":        "test_1",
			"webhook-timestamp": "1772366400",
			"webhook-signature": redactedSignature,
		}
		for k, v := range wantHeaders {
			if r.Headers[k] != v {
				t.Errorf("header %s = %q, want %q", k, r.Headers[k], v)
			}
		}
		var body struct {
			Delivery string        `json:"delivery"`
			Row      store.Row     `json:"row"`
			Entity   *store.Record `json:"entity"`
			Before   *store.Record `json:"before"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Delivery != "test_1" || body.Row.Seq != seq || body.Entity == nil || body.Entity.ID != "t1" || body.Before != nil {
			t.Fatalf("body = %s", r.Body)
		}
	})
}

func TestTestGoFunction(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(f *fixture) {
		t := f.t
		ctx := context.Background()
		seq := f.write(changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: "t1", Properties: json.RawMessage(`{"n": 1}`)})
		f.putFunction("sync", `{"kind": "go", "handler": "sync-to-crm", "writes": ["task"]}`)

		_, err := f.svc.TestFunction(ctx, "s", "sync", TestParams{Seq: seq})
		pe := wantProblem(t, err, problem.Unprocessable, "")
		if pe.Details["handler"] != "sync-to-crm" || !strings.Contains(pe.Message, "not registered") {
			t.Fatalf("unregistered: %v (details %v)", pe, pe.Details)
		}

		var got functions.Input
		err = f.handlers.Register("sync-to-crm", func(_ context.Context, in functions.Input) ([]changelog.Mutation, error) {
			got = in
			return []changelog.Mutation{{Op: changelog.OpPatch, Type: "task", EntityID: in.Entity.ID,
				Patch: json.RawMessage(`{"synced": true}`)}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.svc.TestFunction(ctx, "s", "sync", TestParams{Seq: seq, Trigger: "on-task"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Function != "sync" || res.Kind != functions.KindGo || res.Seq != seq || len(res.Actions) != 1 || res.Request != nil {
			t.Fatalf("result = %+v", res)
		}
		if got.Row.Seq != seq || got.Trigger != "on-task" || !got.Now.Equal(clock) || got.Before != nil {
			t.Errorf("handler input = %+v", got)
		}
		if head := f.write(changelog.Mutation{Op: changelog.OpDelete, Type: "task", EntityID: "t1"}); head != seq+1 {
			t.Errorf("the dry run wrote: head %d, want %d", head, seq+1)
		}

		f.putFunction("bad", `{"kind": "go", "handler": "crash"}`)
		err = f.handlers.Register("crash", func(context.Context, functions.Input) ([]changelog.Mutation, error) { panic("oops") })
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.svc.TestFunction(ctx, "s", "bad", TestParams{Seq: seq})
		if pe := wantProblem(t, err, problem.Unprocessable, ""); !strings.Contains(pe.Message, "panicked: oops") {
			t.Errorf("panic message = %q", pe.Message)
		}
		f.putFunction("sneaky", `{"kind": "go", "handler": "sync-to-crm"}`)
		_, err = f.svc.TestFunction(ctx, "s", "sneaky", TestParams{Seq: seq})
		if pe := wantProblem(t, err, problem.Unprocessable, ""); !strings.Contains(pe.Message, "undeclared") {
			t.Errorf("undeclared message = %q", pe.Message)
		}
	})
}

func TestGoFunctionRegistered(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(f *fixture) {
		t := f.t
		ctx := context.Background()
		f.putFunction("a", `{"kind": "go", "handler": "known"}`)
		f.putFunction("b", `{"kind": "go", "handler": "unknown"}`)
		f.putFunction("c", `{"kind": "expr", "code": "nil"}`)
		if err := f.handlers.Register("known", func(context.Context, functions.Input) ([]changelog.Mutation, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
		fs, err := f.svc.Functions(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, fn := range fs {
			raw, err := json.Marshal(fn.Public())
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(raw))
		}
		want := []string{
			`{"name":"a","kind":"go","writes":[],"handler":"known","registered":true}`,
			`{"name":"b","kind":"go","writes":[],"handler":"unknown","registered":false}`,
			`{"name":"c","kind":"expr","writes":[],"code":"nil"}`,
		}
		if !slices.Equal(got, want) {
			t.Fatalf("listing =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		one, err := f.svc.Function(ctx, "s", "b")
		if err != nil || one.Registered == nil || *one.Registered {
			t.Fatalf("Function(b) = %+v, %v", one, err)
		}
		// The stored form never carries registered.
		d, err := f.log.Store().DefinitionGet(ctx, "s", store.DefFunction, "a")
		if err != nil || strings.Contains(string(d.Def), "registered") {
			t.Fatalf("stored = %s, %v", d.Def, err)
		}
	})
}

// A webhook URL the egress policy denies is refused at save time, and
// nothing is stored: by default link-local and metadata addresses.
func TestPutFunctionEgress(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(f *fixture) {
		ctx := context.Background()
		for _, url := range []string{"http://169.254.169.254/latest/meta-data/", "http://metadata.google.internal/", "http://[fe80::1]:80/"} {
			_, _, err := f.svc.PutFunction(ctx, "s", "meta", []byte(`{"kind": "webhook", "url": "`+url+`"}`))
			wantProblem(f.t, err, problem.BadRequest, "url")
		}
		if _, err := f.svc.Function(ctx, "s", "meta"); err == nil {
			f.t.Fatal("a denied webhook was stored")
		}
		egress, err := functions.NewEgress([]string{"hooks.example.com"}, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		strict := New(f.log, Options{Egress: egress})
		if _, _, err := strict.PutFunction(ctx, "s", "ok", []byte(`{"kind": "webhook", "url": "https://hooks.example.com/x"}`)); err != nil {
			f.t.Fatal(err)
		}
		_, _, err = strict.PutFunction(ctx, "s", "other", []byte(`{"kind": "webhook", "url": "https://evil.example.com/x"}`))
		wantProblem(f.t, err, problem.BadRequest, "url")
	})
}
