package harness

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Mem is the process's memory at one moment, in bytes.
type Mem struct {
	// Go is the live heap plus goroutine stacks after collections.
	Go uint64
	// RSS is the resident set size.
	RSS uint64
}

// MemNow collects a few times (stacks shrink by half per collection
// while mostly unused, as in a long-lived server) and reads the memory.
func MemNow() Mem {
	for range 4 {
		runtime.GC()
	}
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Mem{Go: ms.HeapAlloc + ms.StackInuse, RSS: rss()}
}

// PerItem returns the growth from m to later divided by n, in bytes.
func (m Mem) PerItem(later Mem, n int) (goBytes, rssBytes float64) {
	d := func(a, b uint64) float64 { return (float64(b) - float64(a)) / float64(n) }
	return d(m.Go, later.Go), d(m.RSS, later.RSS)
}

// rss reads VmRSS from /proc (0 where there is none).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
