// Package gcpace spaces the Go garbage collector's cycles out under load.
//
// The collector starts a cycle once the heap has grown by GOGC percent
// (100 by default) over what the last cycle left live, and no sooner than
// at 4 MB. eddy's live heap is a few megabytes and a commit allocates some
// kilobytes, so under load it collected about 75 times a second, and the
// collector with its allocation assists took a quarter of the write
// path's CPU. A larger GOGC for good is no answer: a heap that grows to
// tens of megabytes between cycles hands out memory the caches no longer
// hold, and at a few hundred commits a second that made each commit
// slower (scenario 2: p50 0.88-1.07 → 1.10-1.13 ms with a 64 MiB floor).
//
// So the pacer looks at the allocation rate instead. After every cycle it
// sets the GC percent so that the next cycle comes no sooner than
// MinInterval at the rate measured since the previous one: the heap may
// grow by rate × MinInterval over the live heap, by at most MaxGrowth,
// and never by less than GOGC's own percent allows. A process allocating
// little keeps the runtime's pacing (and its small, cache-warm heap); one
// allocating hundreds of megabytes a second collects about ten times a
// second. GOMEMLIMIT, when set, still caps the heap.
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMinInterval is the spacing `eddy serve` keeps unless told
// otherwise.
const DefaultMinInterval = 100 * time.Millisecond

// MaxGrowth bounds how far the heap may grow over its live part between
// two cycles for the pacer: 64 MiB.
const MaxGrowth = 64 << 20

// The runtime's counts the pacer reads: bytes the last cycle marked live,
// bytes allocated since the process began, and the GC percent in force
// (GOGC or the last debug.SetGCPercent; -1 when off).
const (
	liveMetric    = "/gc/heap/live:bytes"
	allocsMetric  = "/gc/heap/allocs:bytes"
	percentMetric = "/gc/gogc:percent"
)

// PercentFor returns the GC percent for a heap of live bytes allocating
// rate bytes a second: the heap may grow by rate × interval before the
// next cycle, by at most MaxGrowth, and by no less than base percent.
func PercentFor(live uint64, rate float64, interval time.Duration, base int) int {
	growth := min(rate*interval.Seconds(), MaxGrowth)
	live = max(live, 1<<20) // below a MiB the runtime's 4 MB minimum rules
	p := int(growth * 100 / float64(live))
	return max(base, p)
}

// pacer is the running pacer; there is at most one, as the GC percent is
// the process's.
type pacer struct {
	mu       sync.Mutex
	interval time.Duration
	base     int // the percent before Start, restored by stop
	set      int // the percent last set
	stopped  bool
	at       time.Time // when the last cycle was seen
	allocs   uint64    // bytes allocated by then
	sample   []metrics.Sample
}

var (
	activeMu sync.Mutex
	active   *pacer
	// paced, when set, is told each percent the pacer sets (tests).
	paced atomic.Pointer[func(percent int)]
)

// Start paces the collector until the returned stop is called, which
// restores the GC percent found at Start. An interval of 0 or less does
// nothing, and so does a collector turned off (GOGC=off). Starting again
// replaces the running pacer.
func Start(interval time.Duration) (stop func()) {
	activeMu.Lock()
	defer activeMu.Unlock()
	var base int
	if active != nil {
		base = active.halt()
		debug.SetGCPercent(base)
		active = nil
	} else {
		base = Percent()
	}
	if interval <= 0 || base < 0 {
		return func() {}
	}
	p := &pacer{interval: interval, base: base, set: base,
		sample: []metrics.Sample{{Name: liveMetric}, {Name: allocsMetric}}}
	metrics.Read(p.sample)
	p.at, p.allocs = time.Now(), p.sample[1].Value.Uint64()
	active = p
	p.arm()
	return func() {
		activeMu.Lock()
		defer activeMu.Unlock()
		if active == p {
			active = nil
			debug.SetGCPercent(p.halt())
		}
	}
}

// StartUnlessGOGC is Start unless getenv (os.Getenv, say) sets GOGC: the
// operator chose the pacing, and that choice wins. It returns the GOGC it
// deferred to ("" when it started the pacer, or when interval is 0).
func StartUnlessGOGC(interval time.Duration, getenv func(string) string) (stop func(), gogc string) {
	if interval <= 0 {
		return func() {}, ""
	}
	if gogc := getenv("GOGC"); gogc != "" {
		return func() {}, gogc
	}
	return Start(interval), ""
}

// Percent returns the GC percent in force: GOGC's, or the last one set
// (by the pacer or debug.SetGCPercent); -1 when the collector is off.
func Percent() int {
	s := []metrics.Sample{{Name: percentMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	return int(int64(s[0].Value.Uint64()))
}

// halt stops p and returns its base percent.
func (p *pacer) halt() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	return p.base
}

// sentinel is an object whose collection marks the end of a GC cycle: it
// holds a pointer so the allocator never batches it with live objects.
type sentinel struct{ _ *sentinel }

// arm allocates a sentinel whose cleanup runs after the next cycle that
// finds it unreachable: the pacer looks at the heap once a cycle.
func (p *pacer) arm() {
	runtime.AddCleanup(&sentinel{}, (*pacer).collected, p)
}

// collected paces after a cycle and arms the next one, until stopped.
func (p *pacer) collected() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.pace()
	p.arm()
}

// pace sets the percent the allocation rate since the last cycle calls
// for; p.mu is held.
func (p *pacer) pace() {
	metrics.Read(p.sample)
	now, allocs := time.Now(), p.sample[1].Value.Uint64()
	elapsed := now.Sub(p.at).Seconds()
	rate := 0.0
	if elapsed > 0 && allocs >= p.allocs {
		rate = float64(allocs-p.allocs) / elapsed
	}
	p.at, p.allocs = now, allocs
	pct := PercentFor(p.sample[0].Value.Uint64(), rate, p.interval, p.base)
	if pct != p.set {
		debug.SetGCPercent(pct)
		p.set = pct
	}
	if f := paced.Load(); f != nil {
		(*f)(pct)
	}
}
