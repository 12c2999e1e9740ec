package harness

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	t.Parallel()
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if got := Quantile(ds, 0.5); got != 50 {
		t.Errorf("p50 = %v, want 50", got)
	}
	if got := Quantile(ds, 0.99); got != 99 {
		t.Errorf("p99 = %v, want 99", got)
	}
	if got := Quantile(nil, 0.99); got != 0 {
		t.Errorf("p99 of nothing = %v, want 0", got)
	}
}

func TestThroughput(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	rate, err := Throughput(context.Background(), 4, 50*time.Millisecond, func(context.Context, int64) error {
		calls.Add(1)
		time.Sleep(time.Millisecond)
		return nil
	})
	if err != nil || rate <= 0 || calls.Load() == 0 {
		t.Fatalf("rate %v, calls %d, err %v", rate, calls.Load(), err)
	}
	boom := errors.New("boom")
	if _, err := Throughput(context.Background(), 4, time.Second, func(_ context.Context, i int64) error {
		if i == 3 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
}

func TestDiskRunCPUPerSync(t *testing.T) {
	t.Parallel()
	run := DiskRun{Latencies: make([]time.Duration, 4), CPU: 100 * time.Microsecond}
	if got := run.CPUPerSync(); got != 25*time.Microsecond {
		t.Errorf("CPUPerSync = %v, want 25µs", got)
	}
	if got := (DiskRun{CPU: time.Second}).CPUPerSync(); got != 0 {
		t.Errorf("CPUPerSync of no writes = %v, want 0", got)
	}
}

func TestDiskSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, rate := range []int{0, 1000} {
		run, err := DiskSync(ctx, t.TempDir(), 2, 5, rate)
		if err != nil || len(run.Latencies) != 5 {
			t.Fatalf("rate %d: %d latencies, %v; want 5", rate, len(run.Latencies), err)
		}
		for i, d := range run.Latencies {
			if d <= 0 {
				t.Errorf("rate %d: latency %d = %v", rate, i, d)
			}
		}
		if run.CPU < 0 {
			t.Errorf("rate %d: CPU %v", rate, run.CPU)
		}
	}
	if _, err := DiskSync(ctx, filepath.Join(t.TempDir(), "missing"), 1, 1, 0); err == nil {
		t.Error("DiskSync in a missing directory succeeded")
	}
}
