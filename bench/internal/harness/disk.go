package harness

import (
	"context"
	"fmt"
	"os"
	"time"
)

// PageSize is the size of one SQLite page (and WAL frame body) as eddy
// configures it.
const PageSize = 4096

// DiskRun is what DiskSync measured.
type DiskRun struct {
	// Latencies are each write's, write and sync together, in order.
	Latencies []time.Duration
	// CPU is this process's processor time over the writes (user and
	// system): on a VM a sync costs the guest's kernel real work, which
	// a commit waiting for it pays too.
	CPU time.Duration
}

// CPUPerSync is the processor time one write and its sync took.
func (r DiskRun) CPUPerSync() time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.CPU / time.Duration(len(r.Latencies))
}

// DiskSync measures the disk of dir the way a WAL commit uses it: n
// writes of pages pages each, one after the other into a file written and
// synced beforehand (as SQLite reuses its WAL file after a checkpoint, so
// no sync also has to record a new file size), each followed by
// fdatasync(2), paced at rate per second (0: back to back).
func DiskSync(ctx context.Context, dir string, pages, n, rate int) (DiskRun, error) {
	f, err := os.CreateTemp(dir, "disk-sync-")
	if err != nil {
		return DiskRun{}, fmt.Errorf("disk sync: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, pages*PageSize)
	if err := preallocate(f, buf, n); err != nil {
		return DiskRun{}, fmt.Errorf("disk sync: %w", err)
	}
	ds := make([]time.Duration, 0, n)
	var off int64
	op := func(int) error {
		t0 := time.Now()
		if _, err := f.WriteAt(buf, off); err != nil {
			return err
		}
		if err := fdatasync(f); err != nil {
			return err
		}
		ds = append(ds, time.Since(t0))
		off += int64(len(buf))
		return nil
	}
	cpu := CPUNow()
	if rate > 0 {
		err = Paced(ctx, rate, n, op)
	} else {
		for i := 0; i < n && err == nil; i++ {
			err = op(i)
		}
	}
	if err != nil {
		return DiskRun{}, fmt.Errorf("disk sync: %w", err)
	}
	return DiskRun{Latencies: ds, CPU: CPUNow().Since(cpu).Total()}, nil
}

// preallocate writes n copies of buf to f and syncs it.
func preallocate(f *os.File, buf []byte, n int) error {
	for i := range n {
		if _, err := f.WriteAt(buf, int64(i*len(buf))); err != nil {
			return err
		}
	}
	return f.Sync()
}
