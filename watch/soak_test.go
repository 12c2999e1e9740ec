package watch

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// soakStreams is the number of streams of the soak test: under make soak
// (EDDY_SOAK set) EDDY_SOAK_STREAMS, default 2000; otherwise a bounded 20.
func soakStreams(t *testing.T) int {
	t.Helper()
	if os.Getenv("EDDY_SOAK") == "" {
		return 20
	}
	n := 2000
	if v := os.Getenv("EDDY_SOAK_STREAMS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("EDDY_SOAK_STREAMS=%q", v)
		}
	}
	return n
}

// TestSoakStalledStreams: streams whose clients never read (issue 9:
// 2,000 of them held 830 MB) each hold a bounded amount while blocked,
// and all are disconnected after the write timeout, their slots freed;
// behind (catching up from the store) and at the head (fed by the
// fan-out). It logs the heap held per stream, and holds it to a bound
// when there are enough streams for the shared parts (the hub's tail) not
// to count: it runs alone (not parallel) so that the figure is its own.
func TestSoakStalledStreams(t *testing.T) {
	n := soakStreams(t)
	// Every stream must block before the first times out: the timeout
	// leaves room for a loaded machine (a 3 s one once ran out at load 18).
	timeout, rows := 10*time.Second, 500
	if n > 100 {
		timeout, rows = 2*time.Minute, 3000
	}
	for _, tc := range []struct{ name, query string }{{"behind", "from=0"}, {"head", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, drivers[0].open(t), Options{WriteTimeout: timeout, MaxStreams: 2 * n, MaxStreamsPerKey: n})
			e.writeBig(rows, 400) // rows of about 0.5 KiB
			res := stallMany(t, e, n, tc.query, true)
			t.Logf("%d stalled streams (%s): %d KiB of heap each while blocked (buffer bound %d KiB), all ended %v after the first write",
				n, tc.name, res.heldPerStream>>10, DefaultMaxBuffer>>10, res.ended.Round(time.Second))
			if limit := int64(2*DefaultMaxBuffer + 64<<10); n >= 1000 && res.heldPerStream > limit {
				t.Errorf("%d bytes held per stalled stream, want at most %d", res.heldPerStream, limit)
			}
		})
	}
}
