package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
)

// idleWindow is how long TestIdleAfterReset measures the process's CPU.
const idleWindow = 10 * time.Second

// After a reset discards a large backlog, the engine goes idle: no
// discarded delivery is loaded or started again, and the process uses
// (almost) no CPU over idleWindow. Not parallel: it measures the whole
// process. The interval is the thing tested.
func TestIdleAfterReset(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 10 idle seconds")
	}
	const backlog = 5000
	var attempts atomic.Int64
	e := newEnv(t, openSQLite(t), engine.Options{LeaseTTL: engine.DefaultLeaseTTL, Observe: func(ev engine.Event) {
		if ev.Kind == "delivery" {
			attempts.Add(1)
		}
	}})
	gate := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	e.handler("stuck", func(ctx context.Context, _ functions.Input) ([]changelog.Mutation, error) {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return nil, nil
	})
	e.trigger("stuck", `{"source":{"changes":{"types":["task"]}},"function":"stuck","delivery":{"ordering":"none"}}`)
	for i := 0; i < backlog; i += 250 {
		ms := make([]changelog.Mutation, 0, 250)
		for j := range 250 {
			ms = append(ms, put("task", fmt.Sprint("t", i+j), map[string]any{}))
		}
		e.write(ms...)
	}
	e.eventually("the backlog", func() bool { return e.status("stuck").Lag == 0 })
	if _, err := e.eng.Reset(t.Context(), space, "stuck"); err != nil {
		t.Fatal(err)
	}
	atReset := attempts.Load()
	release()
	e.eventually("the attempt under way ended", func() bool {
		return e.status("stuck").Deliveries[store.DeliveryRunning] == 0
	})
	before, start := cpuTime(t), time.Now()
	time.Sleep(idleWindow)
	used, wall := cpuTime(t)-before, time.Since(start)
	t.Logf("process CPU %v over %v idle (%.2f%%)", used, wall, 100*used.Seconds()/wall.Seconds())
	// A busy loop costs a core; polling (with the race detector, on a
	// loaded machine) a few percent.
	if used > wall/10 {
		t.Fatalf("the idle engine used %v of CPU in %v (more than 10%%)", used, wall)
	}
	if n := attempts.Load() - atReset; n > 1 {
		t.Errorf("%d attempts ended after the reset, want at most the one under way: discarded deliveries started", n)
	}
	if st := e.status("stuck"); st.Deliveries[store.DeliveryPending] != 0 || st.Deliveries[store.DeliveryDiscarded] < backlog-1 {
		t.Fatalf("after reset: %+v", st.Deliveries)
	}
}

// cpuTime returns the user and system CPU time of this process so far.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
