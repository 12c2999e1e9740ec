package harness

import (
	"context"
	"fmt"
	"os"

	"github.com/eddy-run/eddy/internal/gcpace"
)

// AsServed returns fn run with the Go runtime as `eddy serve` sets it up:
// garbage collections spaced gcpace.DefaultMinInterval apart under load
// (serve's default --gc-min-interval), unless GOGC is set in the
// environment, as serve does. The GC percent is the whole process's, so
// eddy's measurements run inside AsServed and the peers' outside it, each
// system with the runtime settings it ships with (nats-server and etcd
// leave GOGC at 100); the percent in force before is restored when fn
// returns.
func AsServed(fn func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		stop, _ := gcpace.StartUnlessGOGC(gcpace.DefaultMinInterval, os.Getenv)
		defer stop()
		return fn(ctx)
	}
}

// AsServedIf is AsServed(fn) for eddy's measurements (served) and fn
// as it is for a peer's.
func AsServedIf(served bool, fn func(context.Context) error) func(context.Context) error {
	if served {
		return AsServed(fn)
	}
	return fn
}

// ServedNote says how the runtime was set up for each system, for the
// notes of a scenario that measures eddy with AsServed.
var ServedNote = fmt.Sprintf("Go runtime: eddy's measurements run as eddy serve sets the runtime up (under load, garbage collections spaced at least %v apart at the measured allocation rate, the heap growing by at most %d MiB more for it: serve --gc-min-interval); the peers and the baselines with the runtime's default pacing (GOGC=100), as nats-server and etcd ship.", gcpace.DefaultMinInterval, gcpace.MaxGrowth>>20)
