package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/definitions"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
)

// space is the space every test works in.
const space = "s"

// opener opens one store of a driver for a test.
type opener func(t *testing.T) store.Store

// bothDrivers runs fn on SQLite and on PostgreSQL.
func bothDrivers(t *testing.T, fn func(t *testing.T, open opener)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, openSQLite) })
	t.Run("postgres", func(t *testing.T) { fn(t, openPostgres(pgtest.NewDatabase(t))) })
}

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), t.TempDir()+"/eddy.db")
	if err != nil {
		t.Fatal(err)
	}
	return migrated(t, st)
}

// openPostgres returns an opener of stores on one database: every call
// opens another pool on it, as another process would.
func openPostgres(url string) opener {
	return func(t *testing.T) store.Store {
		t.Helper()
		st, err := postgres.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		return migrated(t, st)
	}
}

func migrated(t *testing.T, st store.Store) store.Store {
	t.Helper()
	if err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// env is one eddy process: a log, definitions and a running engine.
type env struct {
	t    *testing.T
	st   store.Store
	log  *changelog.Log
	defs *definitions.Service
	eng  *engine.Engine
	reg  *functions.Registry
}

// testOptions are fast engine settings for tests.
func testOptions() engine.Options {
	return engine.Options{LeaseTTL: 2 * time.Second, Poll: 50 * time.Millisecond}
}

// newEnv starts a process on st with the given options (testOptions when
// zero).
func newEnv(t *testing.T, st store.Store, opts engine.Options) *env {
	t.Helper()
	if opts.LeaseTTL == 0 {
		opts = testOptions()
	}
	e := &env{t: t, st: st, reg: &functions.Registry{}}
	e.log = changelog.New(st, changelog.Options{OnCommit: func(sp string, head int64) {
		if e.eng != nil {
			e.eng.Notify(sp, head)
		}
	}})
	eng := engine.New(e.log, e.reg, opts)
	e.eng = eng
	e.defs = definitions.New(e.log, definitions.Options{Handlers: e.reg, Hooks: eng, Executor: eng})
	if _, err := e.log.EnsureSpace(t.Context(), space); err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = eng.Stop(context.Background())
		_ = e.log.Close()
	})
	return e
}

// function saves a function definition.
func (e *env) function(name, def string) {
	e.t.Helper()
	if _, _, err := e.defs.PutFunction(e.t.Context(), space, name, []byte(def)); err != nil {
		e.t.Fatalf("put function %s: %v", name, err)
	}
}

// trigger saves a trigger definition.
func (e *env) trigger(name, def string) {
	e.t.Helper()
	if _, _, err := e.defs.PutTrigger(e.t.Context(), space, name, []byte(def)); err != nil {
		e.t.Fatalf("put trigger %s: %v", name, err)
	}
}

// write applies mutations as the API would (actor owner) and returns the
// last seq.
func (e *env) write(ms ...changelog.Mutation) int64 {
	e.t.Helper()
	return e.writeAs("owner", ms...)
}

// writeAs applies mutations as the API would for actor and returns the
// last seq.
func (e *env) writeAs(actor string, ms ...changelog.Mutation) int64 {
	e.t.Helper()
	res, err := e.log.Write(e.t.Context(), changelog.WriteRequest{Space: space, Mutations: ms,
		Provenance: store.Provenance{Actor: actor, Via: "api"}})
	if err != nil {
		e.t.Fatal(err)
	}
	for i, r := range res.Receipts {
		if r.Status == store.ReceiptRejected {
			e.t.Fatalf("mutation %d rejected: %+v", i, r.Reason)
		}
	}
	return res.LastSeq
}

func put(typ, id string, props map[string]any) changelog.Mutation {
	raw, _ := json.Marshal(props)
	return changelog.Mutation{Op: changelog.OpPut, Type: typ, EntityID: id, Properties: raw}
}

func patch(typ, id string, p map[string]any) changelog.Mutation {
	raw, _ := json.Marshal(p)
	return changelog.Mutation{Op: changelog.OpPatch, Type: typ, EntityID: id, Patch: raw}
}

// fence waits until every enabled trigger settled every row <= seq.
func (e *env) fence(seq int64, names ...string) {
	e.t.Helper()
	res, err := e.eng.Fence(e.t.Context(), space, seq, names, 20*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	if !res.Done {
		e.t.Fatalf("fence %d: still waiting for %v", seq, res.Waiting)
	}
}

// settle waits until the triggers settled everything up to the head,
// including rows their deliveries wrote, and returns the head.
func (e *env) settle(names ...string) int64 {
	e.t.Helper()
	for range 100 {
		head := e.head()
		e.fence(head, names...)
		if e.head() == head {
			return head
		}
	}
	e.t.Fatal("the log kept growing")
	return 0
}

func (e *env) head() int64 {
	e.t.Helper()
	sp, err := e.log.Space(e.t.Context(), space)
	if err != nil {
		e.t.Fatal(err)
	}
	return sp.Head
}

// commits returns every commit after seq.
func (e *env) commits(after int64) []store.Commit {
	e.t.Helper()
	var out []store.Commit
	for {
		page, err := e.log.Pull(e.t.Context(), space, after, 1000)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, page.Commits...)
		if !page.HasMore {
			return out
		}
		after = page.NextCursor
	}
}

// get returns an entity's properties.
func (e *env) get(typ, id string) map[string]any {
	e.t.Helper()
	rec, err := e.log.Get(e.t.Context(), space, store.EntityKey{Type: typ, ID: id})
	if err != nil {
		e.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Properties, &m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// stances returns trigger → stance of the row seq.
func (e *env) stances(seq int64) map[string]engine.TriggerStance {
	e.t.Helper()
	s, err := e.eng.Stances(e.t.Context(), space, seq)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]engine.TriggerStance{}
	for _, st := range s.Stances {
		out[st.Trigger] = st
	}
	return out
}

// deliveries lists a trigger's deliveries with the given statuses.
func (e *env) deliveries(trigger string, statuses ...store.DeliveryStatus) []engine.DeliveryInfo {
	e.t.Helper()
	page, err := e.eng.Deliveries(e.t.Context(), engine.DeliveryQuery{Space: space, Trigger: trigger, Statuses: statuses, Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	return page.Deliveries
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("unexpected error: %v", err))
	}
	return v
}

// handler registers a Go handler under name and saves a go function of
// the same name that may write the given types.
func (e *env) handler(name string, h functions.Handler, writes ...string) {
	e.t.Helper()
	if err := e.reg.Register(name, h); err != nil {
		e.t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"kind": "go", "handler": name, "writes": append([]string{}, writes...)})
	e.function(name, string(raw))
}

// noop saves the expr function "noop", which does nothing.
func (e *env) noop() {
	e.t.Helper()
	e.function("noop", `{"kind":"expr","code":"nil"}`)
}

// status returns a trigger's status.
func (e *env) status(name string) engine.Status {
	e.t.Helper()
	s, err := e.eng.Status(e.t.Context(), space, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// delivery returns the one delivery of trigger caused by the row seq.
func (e *env) delivery(trigger string, seq int64) engine.DeliveryInfo {
	e.t.Helper()
	var out []engine.DeliveryInfo
	for _, d := range e.deliveries(trigger) {
		if d.Seq == seq {
			out = append(out, d)
		}
	}
	if len(out) != 1 {
		e.t.Fatalf("%d deliveries of %s for row %d, want 1: %+v", len(out), trigger, seq, out)
	}
	return out[0]
}

// eventually polls cond until it holds, failing the test after 10s
// (polltest.Until).
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	polltest.Until(e.t, what, cond)
}

// problemCode returns the code of a *problem.Error in err's chain ("" if
// there is none).
func problemCode(err error) string {
	var pe *problem.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// stillHead sleeps d and fails the test if the head moved meanwhile.
func (e *env) stillHead(head int64, d time.Duration) {
	e.t.Helper()
	time.Sleep(d)
	if now := e.head(); now != head {
		e.t.Fatalf("the head moved from %d to %d: %+v", head, now, e.commits(head))
	}
}
