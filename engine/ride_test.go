package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/sqlite"
	"github.com/eddy-run/eddy/store/storetest"
)

// countedUpdates is a SQLite store that counts the delivery updates it
// applies in transactions of their own (DeliveryUpdateMany).
type countedUpdates struct {
	*sqlite.Store
	n atomic.Int64
}

func (c *countedUpdates) DeliveryUpdateMany(ctx context.Context, us []store.DeliveryUpdate) ([]error, error) {
	c.n.Add(1)
	return c.Store.DeliveryUpdateMany(ctx, us)
}

// rideEnv is a SQLite process whose trigger "t" on items calls a handler
// that says it started and returns once run is closed.
type rideEnv struct {
	*env
	st      *countedUpdates
	started chan struct{} // a call of the handler started
	run     chan struct{} // closed: the handler may return
}

func newRideEnv(t *testing.T) *rideEnv {
	t.Helper()
	inner, err := sqlite.Open(t.Context(), t.TempDir()+"/eddy.db")
	if err != nil {
		t.Fatal(err)
	}
	st := &countedUpdates{Store: inner}
	migrated(t, st)
	r := &rideEnv{env: newEnv(t, st, engine.Options{}), st: st, started: make(chan struct{}, 1), run: make(chan struct{})}
	engine.SetRideWait(r.eng, time.Minute)
	r.handler("wait", func(ctx context.Context, _ functions.Input) ([]changelog.Mutation, error) {
		r.started <- struct{}{}
		select {
		case <-r.run:
		case <-ctx.Done():
		}
		return nil, nil
	})
	r.trigger("t", `{"source":{"changes":{"types":["item"]}},"function":"wait"}`)
	return r
}

// completeDuring lets the handler's running call return while a write
// of m holds its group open, waits until the completion waits for a
// write group, then lets the group commit; the write must land.
func (r *rideEnv) completeDuring(m changelog.Mutation) {
	r.t.Helper()
	<-r.started
	release, wait := storetest.HoldGroup(r.t, r.log, space, m)
	close(r.run)
	r.eventually("the completion waiting for the group", func() bool { return engine.RidersWaiting(r.eng, space) == 1 })
	release()
	if err := wait(); err != nil {
		r.t.Fatalf("the held write: %v", err)
	}
}

// TestDeliveryUpdatesRideWriteGroups: on SQLite, a delivery's completion
// made while a write group of its space is under way is applied in that
// group's transaction (no transaction of its own), after the group's hook
// takes it, and the delivery ends succeeded.
func TestDeliveryUpdatesRideWriteGroups(t *testing.T) {
	t.Parallel()
	r := newRideEnv(t)
	seq := r.write(put("item", "a", map[string]any{"n": 1}))
	r.completeDuring(put("note", "n", map[string]any{"n": 1}))
	r.eventually("the delivery succeeded", func() bool { return r.delivery("t", seq).Status == store.DeliverySucceeded })
	if n := r.st.n.Load(); n != 0 {
		t.Fatalf("%d delivery updates in transactions of their own, want 0: the completion rides the group", n)
	}
	if got := r.get("note", "n"); got == nil {
		t.Fatal("the held write did not land")
	}
}

// TestDeliveryUpdatesRideOnlyGroupsThatCommit: a completion waiting for a
// group whose transaction appends no commit (so runs no hook) is written
// on its own once the space's writes stop.
func TestDeliveryUpdatesRideOnlyGroupsThatCommit(t *testing.T) {
	t.Parallel()
	r := newRideEnv(t)
	r.write(put("note", "n", map[string]any{"n": 1}))
	seq := r.write(put("item", "a", map[string]any{"n": 1}))
	r.completeDuring(put("note", "n", map[string]any{"n": 1})) // unchanged: a no-op
	r.eventually("the delivery succeeded", func() bool { return r.delivery("t", seq).Status == store.DeliverySucceeded })
	if n := r.st.n.Load(); n != 1 {
		t.Fatalf("%d delivery updates in transactions of their own, want 1", n)
	}
	if n := engine.RidersWaiting(r.eng, space); n != 0 {
		t.Fatalf("%d riders still waiting", n)
	}
}
