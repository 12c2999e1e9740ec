package gcpace_test

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/eddy-run/eddy/internal/gcpace"
)

// TestPercentFor: the heap may grow by the allocation of one interval,
// by at most MaxGrowth, and never by less than the base percent allows.
func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name     string
		live     uint64
		rate     float64 // bytes a second
		interval time.Duration
		base     int
		want     int
	}{
		{"idle", 4 * mib, 0, 100 * time.Millisecond, 100, 100},
		{"a few hundred commits a second", 3 * mib, 2.6 * mib, 100 * time.Millisecond, 100, 100},
		{"busy: one interval of allocation", 4 * mib, 200 * mib, 100 * time.Millisecond, 100, 500},
		{"capped at MaxGrowth", 4 * mib, 4096 * mib, 100 * time.Millisecond, 100, 1600},
		{"a large live heap keeps the base", 512 * mib, 200 * mib, 100 * time.Millisecond, 100, 100},
		{"a base above what the rate needs wins", 4 * mib, 20 * mib, 100 * time.Millisecond, 400, 400},
		{"a tiny live heap counts as a MiB", 1024, 10 * mib, 100 * time.Millisecond, 100, 100},
		{"a longer interval, more growth", 4 * mib, 40 * mib, time.Second, 100, 1000},
	} {
		if got := gcpace.PercentFor(tc.live, tc.rate, tc.interval, tc.base); got != tc.want {
			t.Errorf("%s: PercentFor(%d, %.0f, %v, %d) = %d, want %d", tc.name, tc.live, tc.rate, tc.interval, tc.base, got, tc.want)
		}
	}
}

// garbage allocates about n bytes nobody keeps.
func garbage(n int) {
	var keep []byte
	for range n / 4096 {
		keep = make([]byte, 4096)
	}
	runtime.KeepAlive(keep)
}

// TestStartPacesUnderLoadAndStopRestores: a process allocating fast gets
// a GC percent above the base once a cycle has seen the rate, and stop
// puts back the percent found at Start, which later cycles leave alone.
func TestStartPacesUnderLoadAndStopRestores(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	ch := make(chan int, 1)
	defer gcpace.OnPace(ch)()
	stop := gcpace.Start(time.Second)
	garbage(256 << 20) // hundreds of MB a second, for a second's pacing
	runtime.GC()
	select {
	case got := <-ch:
		if got <= 150 {
			t.Fatalf("under load: paced %d, want above the base 150", got)
		}
	case <-time.After(time.Minute):
		t.Fatal("no pacing after a collection")
	}
	if p := gcpace.Percent(); p <= 150 {
		t.Fatalf("under load: percent in force %d, want above 150", p)
	}
	stop()
	if p := gcpace.Percent(); p != 150 {
		t.Fatalf("after stop: percent %d, want 150 back", p)
	}
	garbage(64 << 20)
	runtime.GC() // the armed cleanup runs and must change nothing now
	runtime.GC()
	if p := gcpace.Percent(); p != 150 {
		t.Fatalf("collections after stop: percent %d, want 150", p)
	}
}

// TestStartLeavesTheCollectorOff: with GOGC=off (percent -1) Start does
// nothing, and a zero interval does nothing either.
func TestStartLeavesTheCollectorOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	stop := gcpace.Start(time.Second)
	if p := gcpace.Percent(); p != -1 {
		t.Fatalf("Start with the collector off: percent %d, want -1", p)
	}
	stop()
	debug.SetGCPercent(100)
	stop = gcpace.Start(0)
	garbage(64 << 20)
	runtime.GC()
	if p := gcpace.Percent(); p != 100 {
		t.Fatalf("Start(0): percent %d, want 100", p)
	}
	stop()
}

// TestStartAgainReplaces: a second Start takes over from the first, and
// its stop restores the percent from before the first.
func TestStartAgainReplaces(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(120))
	ch := make(chan int, 1)
	defer gcpace.OnPace(ch)()
	first := gcpace.Start(time.Second)
	second := gcpace.Start(time.Second)
	first() // no longer the running pacer: changes nothing
	garbage(256 << 20)
	runtime.GC()
	if got := <-ch; got <= 120 {
		t.Fatalf("the second pacer paced %d, want above 120", got)
	}
	second()
	if p := gcpace.Percent(); p != 120 {
		t.Fatalf("after the second stop: percent %d, want 120", p)
	}
}

// TestStartUnlessGOGC: a GOGC in the environment wins and is returned; a
// zero interval starts nothing; otherwise the pacer runs.
func TestStartUnlessGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	env := func(gogc string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return gogc
			}
			return ""
		}
	}
	stop, gogc := gcpace.StartUnlessGOGC(time.Second, env("200"))
	stop()
	if gogc != "200" {
		t.Errorf("GOGC=200 in the environment: deferred to %q, want 200", gogc)
	}
	if stop, gogc = gcpace.StartUnlessGOGC(0, env("")); gogc != "" {
		t.Errorf("interval 0: deferred to %q, want nothing", gogc)
	}
	stop()
	ch := make(chan int, 1)
	defer gcpace.OnPace(ch)()
	stop, gogc = gcpace.StartUnlessGOGC(time.Second, env(""))
	defer stop()
	if gogc != "" {
		t.Fatalf("no GOGC: deferred to %q", gogc)
	}
	garbage(256 << 20)
	runtime.GC()
	if got := <-ch; got <= 100 {
		t.Fatalf("started: paced %d, want above 100 under load", got)
	}
}
