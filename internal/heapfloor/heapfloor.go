// Package heapfloor keeps the Go garbage collector from collecting a
// small heap over and over.
//
// The collector starts a cycle once the heap has grown by GOGC percent
// (100 by default) over what the last cycle left live, and no sooner than
// at 4 MB. eddy's live heap is a few megabytes, and every commit
// allocates some kilobytes (statement arguments, the row's encodings), so
// under load it collected about 75 times a second, and the collector and
// its allocation assists took a fifth of the write path's CPU. A floor
// raises the heap goal to at least Floor bytes while the live heap is
// small, and leaves GOGC's own pacing alone once twice the live heap is
// above it: after every cycle the tuner sets the GC percent to the larger
// of the base percent and the one whose goal is the floor. It is the
// dynamic-GOGC technique of TiDB's and Uber's GC tuners; GOMEMLIMIT, when
// set, still caps the heap.
package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// DefaultFloor is the floor `eddy serve` keeps unless told otherwise:
// 64 MiB.
const DefaultFloor = 64 << 20

// maxPercent bounds the GC percent the tuner sets, for a live heap so
// small that reaching the floor would take an absurd percent.
const maxPercent = 10_000

// The runtime's count of the bytes the last cycle marked live, and its
// GC percent (GOGC or the last debug.SetGCPercent; -1 when off).
const (
	liveMetric    = "/gc/heap/live:bytes"
	percentMetric = "/gc/gogc:percent"
)

// PercentFor returns the GC percent whose heap goal, live×(1+p/100), is
// at least floor, and never below base (GOGC's own percent).
func PercentFor(floor, live uint64, base int) int {
	if live == 0 {
		return max(base, maxPercent)
	}
	if floor <= live {
		return base
	}
	p := (floor - live) * 100 / live
	return max(base, int(min(p, maxPercent)))
}

// tuner is the running floor; there is at most one, as the GC percent is
// the process's.
type tuner struct {
	mu      sync.Mutex
	floor   uint64
	base    int // the percent before Start, restored by Stop
	set     int // the percent last set
	stopped bool
	sample  []metrics.Sample
}

var (
	activeMu sync.Mutex
	active   *tuner
	// tuned, when set, is told each percent the tuner sets (tests).
	tuned atomic.Pointer[func(percent int)]
)

// Start keeps the heap goal at least floor bytes until the returned stop
// is called, which restores the GC percent found at Start. A floor of 0
// or less does nothing, and so does a collector turned off (GOGC=off).
// Starting again replaces the running floor.
func Start(floor int64) (stop func()) {
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
	if floor <= 0 || base < 0 {
		return func() {}
	}
	t := &tuner{floor: uint64(floor), base: base, set: base,
		sample: []metrics.Sample{{Name: liveMetric}}}
	active = t
	t.mu.Lock()
	t.tune()
	t.mu.Unlock()
	t.arm()
	return func() {
		activeMu.Lock()
		defer activeMu.Unlock()
		if active == t {
			active = nil
			debug.SetGCPercent(t.halt())
		}
	}
}

// Percent returns the GC percent in force: GOGC's, or the last one set
// (by the tuner or debug.SetGCPercent); -1 when the collector is off.
func Percent() int {
	s := []metrics.Sample{{Name: percentMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	return int(int64(s[0].Value.Uint64()))
}

// halt stops t and returns its base percent.
func (t *tuner) halt() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	return t.base
}

// sentinel is an object whose collection marks the end of a GC cycle: it
// holds a pointer so the allocator never batches it with live objects.
type sentinel struct{ _ *sentinel }

// arm allocates a sentinel whose cleanup runs after the next cycle that
// finds it unreachable: the tuner looks at the heap once a cycle.
func (t *tuner) arm() {
	runtime.AddCleanup(&sentinel{}, (*tuner).collected, t)
}

// collected tunes after a cycle and arms the next one, until stopped.
func (t *tuner) collected() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.tune()
	t.arm()
}

// tune sets the percent the live heap calls for; t.mu is held.
func (t *tuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	p := PercentFor(t.floor, t.sample[0].Value.Uint64(), t.base)
	if p != t.set {
		debug.SetGCPercent(p)
		t.set = p
	}
	if f := tuned.Load(); f != nil {
		(*f)(p)
	}
}
