package harness

import (
	"context"
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

// ServedNote says how the runtime was set up for each system, for the
// notes of a scenario that measures eddy with AsServed.
const ServedNote = "Go runtime: eddy's measurements run as eddy serve sets the runtime up (under load, garbage collections spaced at least 100 ms apart at the measured allocation rate, the heap growing by at most 64 MiB more for it: serve --gc-min-interval); the peers and the baselines with the runtime's default pacing (GOGC=100), as nats-server and etcd ship."
