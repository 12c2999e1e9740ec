package storetest

import (
	"errors"
	"sync/atomic"
	"testing"
)

func TestRunWriters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		writers int
		failAt  int64 // 0: never
	}{
		{"one writer", 1, 0},
		{"many writers", 8, 0},
		{"failing", 4, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls, sum, top atomic.Int64
			var failed atomic.Bool
			res := testing.Benchmark(func(b *testing.B) { //nolint:thelper // a benchmark body, not a helper
				calls.Store(0)
				sum.Store(0)
				top.Store(0)
				RunWriters(b, tc.writers, func(i int64) error {
					calls.Add(1)
					sum.Add(i)
					for m := top.Load(); i > m && !top.CompareAndSwap(m, i); m = top.Load() {
					}
					if i == tc.failAt {
						failed.Store(true)
						return errors.New("boom")
					}
					return nil
				})
			})
			if tc.failAt != 0 {
				if !failed.Load() || res.N != 0 {
					t.Fatalf("failing op: failed=%t, N=%d; want the benchmark failed", failed.Load(), res.N)
				}
				return
			}
			n := int64(res.N)
			if n == 0 || calls.Load() != n || top.Load() != n || sum.Load() != n*(n+1)/2 || res.Extra["commits/s"] <= 0 {
				t.Fatalf("N=%d: calls=%d, top=%d, sum=%d, commits/s=%v; want each of 1..N once",
					n, calls.Load(), top.Load(), sum.Load(), res.Extra["commits/s"])
			}
		})
	}
}
