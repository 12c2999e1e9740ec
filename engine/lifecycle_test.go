package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// New starts nothing; Stop is idempotent and safe if never started; no
// Start after Stop.
func TestStopNeverStarted(t *testing.T) {
	t.Parallel()
	st := openSQLite(t)
	log := changelog.New(st, changelog.Options{})
	t.Cleanup(func() { _ = log.Close() })
	eng := engine.New(log, nil, engine.Options{})
	for range 2 {
		if err := eng.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.Start(t.Context()); err == nil {
		t.Fatal("Start after Stop succeeded")
	}
}

// Stop honours its context's deadline: an attempt that outlasts it is
// canceled and Stop says so; a second Stop returns at once.
func TestStopHonoursDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, openSQLite(t), testOptions())
	started := make(chan context.Context, 1)
	e.handler("slow", func(ctx context.Context, _ functions.Input) ([]changelog.Mutation, error) {
		started <- ctx
		<-ctx.Done()
		return nil, ctx.Err()
	})
	e.trigger("slow", `{"source":{"changes":{"types":["task"]}},"function":"slow"}`)
	e.write(put("task", "t1", map[string]any{}))
	attempt := <-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := e.eng.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop: %v, want the deadline", err)
	}
	// The attempt was canceled before Stop returned. (A go handler's
	// call returns once its context is done, without waiting for the
	// handler to notice: whether this one has returned yet is a race.)
	if attempt.Err() == nil {
		t.Fatal("Stop returned with the attempt's context still live")
	}
	if err := e.eng.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// With two processes, triggers saved in one start within a poll
// interval, also those the lease hand-out gives to the other (with a
// lease round only every 10s, waiting for one would time the fences
// out).
func TestNewTriggerStartsWithinPoll(t *testing.T) {
	t.Parallel()
	open := openPostgres(pgtest.NewDatabase(t))
	opts := func(owner string) engine.Options {
		return engine.Options{Owner: owner, LeaseTTL: 30 * time.Second, Poll: 50 * time.Millisecond}
	}
	a := newEnv(t, open(t), opts("a"))
	newEnv(t, open(t), opts("b"))
	a.noop()
	a.eventually("both processes beat", func() bool { return true })
	for i := range 4 {
		a.trigger(fmt.Sprint("t", i), `{"source":{"changes":{"types":["task"]}},"function":"noop"}`)
	}
	seq := a.write(put("task", "x", map[string]any{}))
	res, err := a.eng.Fence(t.Context(), space, seq, nil, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done {
		t.Fatalf("3s after saving, triggers %v had not judged row %d", res.Waiting, seq)
	}
	owners := map[string]int{}
	for i := range 4 {
		owners[a.status(fmt.Sprint("t", i)).Owner]++
	}
	if owners["a"] != 2 || owners["b"] != 2 {
		t.Fatalf("leases %v, want two each", owners)
	}
}
