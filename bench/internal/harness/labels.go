package harness

import (
	"context"
	"runtime/pprof"
)

// Labeled runs fn with the pprof label key=value on this goroutine and on
// every goroutine it starts, so a profile of the run (eddybench
// -cpuprofile) can be cut per system with `go tool pprof -tagfocus`.
func Labeled(ctx context.Context, key, value string, fn func(context.Context) error) error {
	var err error
	pprof.Do(ctx, pprof.Labels(key, value), func(ctx context.Context) { err = fn(ctx) })
	return err
}
