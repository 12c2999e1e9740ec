package harness

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Throughput runs op from writers goroutines for d and returns the
// completed calls per second. Each call gets a distinct number from 1 up
// (the numbering starts again with every Throughput).
// The first error stops every writer and is returned.
func Throughput(ctx context.Context, writers int, d time.Duration, op func(ctx context.Context, i int64) error) (float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next, done atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for range writers {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if err := op(ctx, next.Add(1)); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), first
}

// Paced calls op n times, one call every 1/rate seconds, and returns the
// first error.
func Paced(ctx context.Context, rate, n int, op func(i int) error) error {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := range n {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if err := op(i); err != nil {
			return err
		}
	}
	return nil
}
