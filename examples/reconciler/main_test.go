package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/internal/eddytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait on a condition.
const wait = 20 * time.Second

// The reconciler end to end, as a user runs it: it lists the collection
// and follows it live (a merge included), stops, resumes from its saved
// position after changes made while it was down, and after the history
// it needs was pruned lists again, dropping what was deleted meanwhile.
func TestReconciler(t *testing.T) {
	watchOptions = client.WatchOptions{MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	srv := eddytest.New(t, eddytest.SQLite)
	c, err := client.New(srv.URL, client.Options{Token: srv.Admin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	sp := c.Space("default")
	ctx := context.Background()
	write := func(f func() error) {
		t.Helper()
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	put := func(id string, props map[string]any) {
		t.Helper()
		write(func() error { _, err := sp.Put(ctx, "task", id, props); return err })
	}
	del := func(id string) {
		t.Helper()
		write(func() error { _, err := sp.Delete(ctx, "task", id); return err })
	}
	for _, id := range []string{"a", "b", "c"} {
		put(id, map[string]any{"title": id})
	}
	write(func() error { _, err := sp.Put(ctx, "note", "n", map[string]any{}); return err })
	db := filepath.Join(t.TempDir(), "external.db")
	args := []string{"--server", srv.URL, "--token", srv.Admin, "--db", db, "--page", "2"}
	// The file exists before the reconciler and converged open it
	// together: two connections turning a new file to WAL at once may
	// fail with SQLITE_BUSY without waiting (SQLite does not wait for
	// that lock), about once in 300 tries here.
	x, err := openExternal(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}

	first := start(t, args)
	converged(t, first, sp, db)
	first.wantLog(t, "listed 3 task at seq 4")
	put("a", map[string]any{"title": "a", "status": "done"})
	del("b")
	put("d", map[string]any{"title": "d", "extra": true})
	write(func() error {
		_, err := sp.Mutate(ctx, client.Batch{Mutations: []client.Mutation{
			{Op: client.OpMerge, Type: "task", EntityID: "c", From: &client.EntityKey{Type: "task", ID: "d"}},
		}})
		return err
	})
	converged(t, first, sp, db)
	first.stop(t)

	put("c", map[string]any{"title": "c2"})
	put("e", map[string]any{"title": "e"})
	del("a")
	second := start(t, args)
	converged(t, second, sp, db)
	second.wantLog(t, "resuming task from seq")
	if strings.Contains(second.logs(), "listed") {
		t.Fatalf("a restart listed again:\n%s", second.logs())
	}
	second.stop(t)

	del("c")
	put("f", map[string]any{"title": "f"})
	info, err := sp.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Prune(ctx, client.PruneParams{Through: info.Head}); err != nil {
		t.Fatal(err)
	}
	third := start(t, args)
	converged(t, third, sp, db)
	third.wantLog(t, "compacted: seq")
	third.wantLog(t, "(1 gone)")
	third.stop(t)
}

// An applied change applied again changes nothing.
func TestApplyIsIdempotent(t *testing.T) {
	ctx := context.Background()
	x, err := openExternal(ctx, filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rec := client.Record{Type: "task", ID: "a", Version: 5, Properties: json.RawMessage(`{"v":5}`)}
	older := client.Record{Type: "task", ID: "a", Version: 3, Properties: json.RawMessage(`{"v":3}`)}
	steps := []struct {
		c    change
		want int
	}{
		{change{Type: "task", ID: "a", Record: &rec}, 1},
		{change{Type: "task", ID: "a", Record: &rec}, 0},
		{change{Type: "task", ID: "a", Record: &older}, 0},
		{change{Type: "task", ID: "a", Version: 7}, 1},   // deleted at 7
		{change{Type: "task", ID: "a", Record: &rec}, 0}, // an old read cannot resurrect it
	}
	for i, s := range steps {
		n, err := x.apply(ctx, "default", "task", int64(i), []change{s.c})
		if err != nil || n != s.want {
			t.Fatalf("step %d: %d changed (%v), want %d", i, n, err, s.want)
		}
	}
	if pos, ok, err := x.cursor(ctx, "default", "task"); err != nil || !ok || pos != 4 {
		t.Fatalf("cursor = %d %v %v", pos, ok, err)
	}
}

// running is one reconciler run in the background.
type running struct {
	cancel context.CancelFunc
	done   chan error
	buf    *eddytest.Buffer
}

func start(t *testing.T, args []string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1), buf: &eddytest.Buffer{}}
	go func() { r.done <- run(ctx, args, r.buf) }()
	t.Cleanup(func() { r.cancel(); <-r.done })
	return r
}

// stop ends the run and checks it ended cleanly.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("reconciler: %v\n%s", err, r.logs())
		}
	case <-time.After(wait):
		t.Fatalf("reconciler did not stop\n%s", r.logs())
	}
	r.wantLog(t, "stopped")
}

func (r *running) logs() string { return r.buf.String() }

func (r *running) wantLog(t *testing.T, s string) {
	t.Helper()
	if !strings.Contains(r.logs(), s) {
		t.Fatalf("log does not say %q:\n%s", s, r.logs())
	}
}

// converged waits until the external system holds exactly the live
// tasks of the space, at their versions, and its cursor is the head; it
// fails at once, with the reconciler's log, if r has ended.
func converged(t *testing.T, r *running, sp *client.Space, db string) {
	t.Helper()
	ctx := context.Background()
	x, err := openExternal(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	deadline := time.Now().Add(wait)
	var want, got map[string]string
	for {
		want, err = listed(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		got, err = held(ctx, x)
		if err != nil {
			t.Fatal(err)
		}
		info, err := sp.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pos, _, err := x.cursor(ctx, sp.Name(), "task")
		if err != nil {
			t.Fatal(err)
		}
		if maps.Equal(want, got) && pos == info.Head {
			return
		}
		select {
		case err := <-r.done:
			r.done <- err // for the cleanup
			t.Fatalf("the reconciler ended (%v) before converging\n%s", err, r.logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("external system %v at %d, eddy %v at %d\n%s", got, pos, want, info.Head, r.logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listed returns the space's tasks as "version properties" by id.
func listed(ctx context.Context, sp *client.Space) (map[string]string, error) {
	out := map[string]string{}
	for page, err := range sp.ListPages(ctx, "task", 100) {
		if err != nil {
			return nil, err
		}
		for _, r := range page.Items {
			out[r.ID] = fmt.Sprintf("%d %s", r.Version, r.Properties)
		}
	}
	return out, nil
}

// held returns the external system's live tasks the same way.
func held(ctx context.Context, x *external) (map[string]string, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT id, version, properties FROM items WHERE type = 'task' AND deleted = 0`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, props string
		var v int64
		if err := rows.Scan(&id, &v, &props); err != nil {
			return nil, err
		}
		out[id] = fmt.Sprintf("%d %s", v, props)
	}
	return out, rows.Err()
}
