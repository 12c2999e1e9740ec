package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
)

// Once disable answers, no new attempt of the trigger starts (the one
// under way finishes); enable resumes the waiting deliveries. The sleep
// is the thing tested: nothing starts during a few poll intervals.
func TestDisableStopsAttemptsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, openSQLite(t), testOptions())
	gate := make(chan struct{})
	var calls atomic.Int32
	e.handler("slow", func(ctx context.Context, _ functions.Input) ([]changelog.Mutation, error) {
		if calls.Add(1) == 1 {
			select {
			case <-gate:
			case <-ctx.Done():
			}
		}
		return nil, nil
	})
	e.trigger("slow", `{"source":{"changes":{"types":["task"]}},"function":"slow"}`)
	for i := range 4 {
		e.write(put("task", fmt.Sprint("t", i), map[string]any{}))
	}
	e.eventually("the first attempt", func() bool { return calls.Load() == 1 })
	if _, err := e.eng.Disable(t.Context(), space, "slow"); err != nil {
		t.Fatal(err)
	}
	close(gate)
	e.eventually("the first delivery", func() bool { return e.status("slow").Deliveries[store.DeliverySucceeded] == 1 })
	time.Sleep(4 * testOptions().Poll) // several polls pass: no attempt may start
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d attempts after disable answered, want none past the first", n-1)
	}
	if _, err := e.eng.Enable(t.Context(), space, "slow", false); err != nil {
		t.Fatal(err)
	}
	e.settle()
	if n := e.status("slow").Deliveries[store.DeliverySucceeded]; n != 4 {
		t.Fatalf("%d deliveries succeeded after enable, want 4", n)
	}
}

// Discard and reset take effect at once: a discarded delivery queued in
// this process never starts.
func TestDiscardAndResetAtOnce(t *testing.T) {
	t.Parallel()
	opts := testOptions()
	var ended atomic.Int32
	opts.Observe = func(ev engine.Event) {
		if ev.Kind == "delivery" {
			ended.Add(1)
		}
	}
	e := newEnv(t, openSQLite(t), opts)
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	var calls atomic.Int32
	e.handler("slow", func(ctx context.Context, _ functions.Input) ([]changelog.Mutation, error) {
		calls.Add(1)
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return nil, nil
	}, "task")
	e.trigger("slow", `{"source":{"changes":{"types":["task"]}},"function":"slow","delivery":{"ordering":"none"}}`)
	var seqs []int64
	for i := range 3 {
		seqs = append(seqs, e.write(put("task", fmt.Sprint("t", i), map[string]any{})))
	}
	e.eventually("the first attempt", func() bool { return calls.Load() == 1 })
	e.eventually("every row judged", func() bool { return e.status("slow").Lag == 0 })
	second := e.delivery("slow", seqs[1])
	if _, err := e.eng.Discard(t.Context(), space, second.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.Reset(t.Context(), space, "slow"); err != nil {
		t.Fatal(err)
	}
	if got := e.delivery("slow", seqs[2]); got.Status != store.DeliveryDiscarded {
		t.Fatalf("after reset: %+v", got)
	}
	release()
	e.eventually("the first attempt ended", func() bool { return ended.Load() == 1 })
	time.Sleep(4 * testOptions().Poll) // several polls pass: no attempt may start
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d attempts, want 1: a discarded delivery started", n)
	}
}
