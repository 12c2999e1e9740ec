package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/definitions"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/watch"
)

// sqliteEnv is one test's server over SQLite, without an engine: enough
// for parameter validation.
func sqliteEnv(t *testing.T) *env {
	t.Helper()
	return newEnv(t, drivers[0], 0)
}

// wantDetail fails unless pe.Details[key] is value.
func wantDetail(t *testing.T, what string, pe *problem.Error, key, value string) {
	t.Helper()
	if pe.Details[key] != value {
		t.Errorf("%s: details = %v, want %s %q (message %q)", what, pe.Details, key, value, pe.Message)
	}
}

// wantNoEngine fails unless r is the 503 of a server without an engine.
func wantNoEngine(t *testing.T, what string, r *resp) {
	t.Helper()
	if pe := r.problem(problem.Unavailable); pe.Message != "the trigger engine is not running" {
		t.Errorf("%s: message = %q", what, pe.Message)
	}
}

// saveTrigger saves the function f and a change trigger name calling it.
func saveTrigger(t *testing.T, e *env, name string) {
	t.Helper()
	e.call(t, "PUT", "/api/v1/spaces/default/functions/f", map[string]any{"kind": "expr", "writes": []string{"note"}, "code": "nil"}).want(http.StatusCreated)
	e.call(t, "PUT", "/api/v1/spaces/default/triggers/"+name, map[string]any{
		"source": map[string]any{"changes": map[string]any{"types": []string{"task"}}}, "function": "f",
	}).want(http.StatusCreated)
}

func TestTriggerOpsWithoutEngine(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	saveTrigger(t, e, "on-task")
	base := "/api/v1/spaces/default/triggers/on-task/"
	for _, op := range []string{"enable", "disable", "reset"} {
		wantNoEngine(t, op, e.call(t, "POST", base+op, nil))
		wantNoEngine(t, op+" {}", e.call(t, "POST", base+op, "{}"))
	}
	wantNoEngine(t, "enable skip", e.call(t, "POST", base+"enable", map[string]any{"skip": true}))
	wantNoEngine(t, "replay", e.call(t, "POST", base+"replay", map[string]any{"from": 0}))
	wantNoEngine(t, "replay 7", e.call(t, "POST", base+"replay", map[string]any{"from": 7}))

	// Without an engine GET shows the definition alone.
	got := e.call(t, "GET", "/api/v1/spaces/default/triggers/on-task", nil).want(http.StatusOK).obj()
	if k := keys(got); !slices.Equal(k, []string{"coalesce", "delivery", "echo", "enabled", "function", "name", "source", "start"}) {
		t.Errorf("get trigger keys = %v", k)
	}
}

func TestTriggerOpsValidation(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	base := "/api/v1/spaces/default/triggers/on-task/"
	fields := []struct {
		what, op string
		body     any
		field    string
	}{
		{"replay without body", "replay", nil, "from"},
		{"replay without from", "replay", "{}", "from"},
		{"replay from null", "replay", `{"from": null}`, "from"},
		{"replay from negative", "replay", map[string]any{"from": -1}, "from"},
		{"replay from a string", "replay", map[string]any{"from": "3"}, "from"},
		{"replay unknown field", "replay", map[string]any{"from": 1, "to": 3}, "to"},
		{"enable skip a string", "enable", map[string]any{"skip": "yes"}, "skip"},
		{"enable unknown field", "enable", map[string]any{"skipped": true}, "skipped"},
		{"disable with a field", "disable", map[string]any{"skip": true}, "skip"},
		{"reset with a field", "reset", map[string]any{"hard": true}, "hard"},
	}
	for _, f := range fields {
		wantDetail(t, f.what, e.call(t, "POST", base+f.op, f.body).problem(problem.BadRequest), "field", f.field)
	}
	e.call(t, "POST", base+"replay", `{"from": 1`).problem(problem.BadRequest)
	e.call(t, "POST", base+"enable", `[]`).problem(problem.BadRequest)
	wantDetail(t, "query parameter", e.call(t, "POST", base+"enable?skip=1", nil).problem(problem.BadRequest), "parameter", "skip")

	reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
	writer := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter})
	other := e.token(auth.CreateParams{Space: "other", Role: auth.RoleAdmin})
	for _, op := range []string{"enable", "disable", "reset", "replay"} {
		for _, tok := range []string{reader, writer, other} {
			e.do(t, req{Method: "POST", Path: base + op, Token: tok, Body: map[string]any{"from": 1}}).problem(problem.Forbidden)
		}
		e.do(t, req{Method: "POST", Path: base + op}).problem(problem.Unauthorized)
		e.call(t, "GET", base+op, nil).want(http.StatusMethodNotAllowed)
	}
}

func TestWithKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    any
		want string
	}{
		{map[string]int{"a": 1}, `{"a":1,"status":{"x":[1]}}`},
		{struct{}{}, `{"status":{"x":[1]}}`},
		{json.RawMessage(" { } "), `{"status":{"x":[1]}}`},
		{struct {
			B string `json:"b"`
			A int    `json:"a"`
		}{"y", 2}, `{"b":"y","a":2,"status":{"x":[1]}}`},
	}
	for _, tt := range tests {
		got, err := withKey(tt.v, "status", map[string][]int{"x": {1}})
		if err != nil || string(got) != tt.want {
			t.Errorf("withKey(%v) = %s, %v; want %s", tt.v, got, err, tt.want)
		}
	}
	if _, err := withKey([]int{1}, "status", 1); err == nil {
		t.Error("withKey of an array: no error")
	}
}

// newEngineEnv is newEnv with a running trigger engine (polling every
// 20ms) wired like eddy.Open wires it.
func newEngineEnv(t *testing.T, d driver) *env {
	t.Helper()
	st := d.open(t)
	var (
		hub *watch.Hub
		eng *engine.Engine
	)
	lg := changelog.New(st, changelog.Options{OnCommit: func(space string, head int64) {
		hub.Notify(space, head)
		eng.Notify(space, head)
	}})
	t.Cleanup(func() { _ = lg.Close() })
	if _, err := lg.EnsureSpace(context.Background(), "default"); err != nil {
		t.Fatalf("ensure space: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	hub = watch.New(lg, watch.Options{Logger: logger, Heartbeat: testHeartbeat})
	eng = engine.New(lg, nil, engine.Options{Poll: 20 * time.Millisecond, Logger: logger})
	if err := eng.Start(context.Background()); err != nil {
		t.Fatalf("start engine: %v", err)
	}
	t.Cleanup(func() { _ = eng.Stop(context.Background()) })
	as := auth.NewService(st)
	defs := definitions.New(lg, definitions.Options{Hooks: eng})
	srv := httptest.NewServer(newServer(t, Config{Log: lg, Auth: as, Hub: hub, Definitions: defs, Engine: eng, Logger: logger, Version: "test"}).Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() { stopHub(t, hub) })
	e := &env{t: t, srv: srv, log: lg, auth: as, hub: hub}
	e.admin = e.token(auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin, Actor: "owner"})
	return e
}

// forEachDriverEngine is forEachDriver with a running engine.
func forEachDriverEngine(t *testing.T, fn func(e *env)) {
	t.Helper()
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			fn(newEngineEnv(t, d))
		})
	}
}

// eventually polls cond for up to 15s (polltest.Within).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	polltest.Within(t, 15*time.Second, what, cond)
}

// status is the status in GET .../triggers/{name}.
func (e *env) status(t *testing.T, name string) engine.Status {
	t.Helper()
	var out struct {
		Status *engine.Status `json:"status"`
	}
	e.call(t, "GET", "/api/v1/spaces/default/triggers/"+name, nil).want(http.StatusOK).decode(&out)
	if out.Status == nil {
		t.Fatalf("trigger %s has no status", name)
	}
	return *out.Status
}

// fenced waits (fence, 10s) until the triggers have handled seq.
func (e *env) fenced(t *testing.T, seq int64, names ...string) {
	t.Helper()
	var res engine.FenceResult
	path := fmt.Sprintf("/api/v1/spaces/default/fence?seq=%d&timeout=10s", seq)
	if len(names) > 0 {
		path += "&triggers=" + strings.Join(names, ",")
	}
	e.call(t, "GET", path, nil).want(http.StatusOK).decode(&res)
	if !res.Done || res.Seq != seq {
		t.Fatalf("fence %d: %+v", seq, res)
	}
}

// putTask writes task id with props and returns its seq.
func (e *env) putTask(t *testing.T, id string, props map[string]any) int64 {
	t.Helper()
	return e.call(t, "PUT", "/api/v1/spaces/default/entities/task/"+id, props).seq()
}

func TestTriggerOps(t *testing.T) {
	t.Parallel()
	forEachDriverEngine(t, func(e *env) {
		t := e.t
		saveTrigger(t, e, "on-task")
		base := "/api/v1/spaces/default/triggers/on-task"

		// GET keeps every key of the definition and adds status.
		got := e.call(t, "GET", base, nil).want(http.StatusOK).obj()
		if k := keys(got); !slices.Equal(k, []string{"coalesce", "delivery", "echo", "enabled", "function", "name", "source", "start", "status"}) {
			t.Errorf("get trigger keys = %v", k)
		}
		st := e.status(t, "on-task")
		if st.Trigger != "on-task" || !st.Enabled || st.Cursor != 0 || st.Head != 0 || st.Lag != 0 || st.Deliveries == nil || st.Skipped == nil {
			t.Errorf("new trigger status = %+v", st)
		}

		s1 := e.putTask(t, "t1", map[string]any{"n": 1})
		e.fenced(t, s1, "on-task")
		st = e.status(t, "on-task")
		if st.Cursor < s1 || st.Deliveries["succeeded"] != 1 || st.Epoch < 1 || st.Owner == "" {
			t.Errorf("status after a write = %+v", st)
		}

		// Disabled, the cursor stands still.
		var op engine.Status
		r := e.call(t, "POST", base+"/disable", nil).want(http.StatusOK)
		r.decode(&op)
		if op.Enabled || r.seq() != e.head(t, "default") {
			t.Errorf("disable = %+v (Eddy-Seq %s)", op, r.header.Get("Eddy-Seq"))
		}
		if d := e.call(t, "GET", base, nil).want(http.StatusOK).obj(); d["enabled"] != false {
			t.Errorf("definition after disable: enabled = %v", d["enabled"])
		}
		// The space's runner notices the disabled definition at its next
		// lease round (poked at once, but asynchronously).
		time.Sleep(200 * time.Millisecond)
		cursor := e.status(t, "on-task").Cursor
		s2 := e.putTask(t, "t2", map[string]any{"n": 2})
		time.Sleep(100 * time.Millisecond)
		if st := e.status(t, "on-task"); st.Cursor != cursor || st.Lag != s2-cursor {
			t.Errorf("disabled trigger moved: %+v (cursor was %d)", st, cursor)
		}

		// Enabled with skip, the rows committed meanwhile are skipped.
		e.call(t, "POST", base+"/enable", map[string]any{"skip": true}).want(http.StatusOK).decode(&op)
		if !op.Enabled || op.Cursor != s2 || op.Lag != 0 || len(op.Skipped) != 1 || op.Skipped[0].Hi != s2 {
			t.Errorf("enable skip = %+v", op)
		}
		e.fenced(t, s2, "on-task")
		if st := e.status(t, "on-task"); st.Deliveries["succeeded"] != 1 {
			t.Errorf("skipped rows were delivered: %+v", st)
		}
		// Enabling an enabled trigger changes nothing.
		e.call(t, "POST", base+"/enable", "").want(http.StatusOK).decode(&op)
		if !op.Enabled || op.Cursor != s2 {
			t.Errorf("enable again = %+v", op)
		}

		// Replay evaluates the rows after from again.
		e.call(t, "POST", base+"/replay", map[string]any{"from": s1 - 1}).want(http.StatusOK).decode(&op)
		// The engine may already have caught up when the answer is made.
		if op.Cursor < s1-1 || op.Cursor > op.Head || op.Lag != op.Head-op.Cursor {
			t.Errorf("replay = %+v", op)
		}
		head := e.head(t, "default")
		e.fenced(t, head, "on-task")
		eventually(t, "the replay to catch up", func() bool { return e.status(t, "on-task").Cursor >= head })
		if st := e.status(t, "on-task"); st.Deliveries["succeeded"] < 2 {
			t.Errorf("replay delivered nothing: %+v", st)
		}

		// Reset: back to the start policy (head) as if new.
		e.call(t, "POST", base+"/reset", nil).want(http.StatusOK).decode(&op)
		if h := e.head(t, "default"); op.Cursor != h || op.Start != h || op.Lag != 0 {
			t.Errorf("reset = %+v (head %d)", op, h)
		}

		// Errors of the engine.
		e.call(t, "POST", base+"/replay", map[string]any{"from": e.head(t, "default") + 1}).problem(problem.BadRequest)
		e.call(t, "POST", "/api/v1/spaces/default/triggers/nope/enable", nil).problem(problem.NotFound)
		e.call(t, "POST", "/api/v1/spaces/default/triggers/nope/replay", map[string]any{"from": 0}).problem(problem.NotFound)
		e.call(t, "GET", "/api/v1/spaces/default/triggers/nope", nil).problem(problem.NotFound)
		e.call(t, "POST", "/api/v1/spaces/nowhere/triggers/on-task/reset", nil).problem(problem.NotFound)
		e.call(t, "PUT", "/api/v1/spaces/default/triggers/tick", map[string]any{
			"source": map[string]any{"cron": map[string]any{"schedule": "@every 1h"}}, "function": "f",
		}).want(http.StatusCreated)
		e.call(t, "POST", "/api/v1/spaces/default/triggers/tick/replay", map[string]any{"from": 0}).problem(problem.BadRequest)
		if st := e.status(t, "tick"); st.Lag != 0 || st.Fired == nil {
			t.Errorf("cron status = %+v", st)
		}
	})
}
