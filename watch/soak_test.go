//go:build soak

package watch

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// soakStreams is the number of streams of the soak tests
// (EDDY_SOAK_STREAMS, default 2000).
func soakStreams(t *testing.T) int {
	t.Helper()
	n := 2000
	if v := os.Getenv("EDDY_SOAK_STREAMS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("EDDY_SOAK_STREAMS=%q", v)
		}
	}
	return n
}

// TestSoakStalledStreams: thousands of streams whose clients never read
// (issue 9: 2,000 of them held 830 MB) each hold a bounded amount while
// blocked, and all are disconnected after the write timeout. It reports
// the heap held per stream, behind (catching up from the store) and at
// the head (fed by the fan-out).
func TestSoakStalledStreams(t *testing.T) {
	n := soakStreams(t)
	for _, tc := range []struct{ name, query string }{{"behind", "from=0"}, {"head", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, drivers[0].open(t), Options{WriteTimeout: 20 * time.Second, MaxStreams: 2 * n, MaxStreamsPerKey: n})
			e.writeBig(3000, 400) // rows of about 0.5 KiB
			res := stallMany(t, e, n, tc.query, true)
			t.Logf("%d stalled streams (%s): %d KiB of heap each while blocked (buffer bound %d KiB), all ended %v after the first write",
				n, tc.name, res.heldPerStream>>10, DefaultMaxBuffer>>10, res.ended.Round(time.Second))
			if limit := int64(2*DefaultMaxBuffer + 64<<10); res.heldPerStream > limit {
				t.Errorf("%d bytes held per stalled stream, want at most %d", res.heldPerStream, limit)
			}
		})
	}
}
