package heapfloor_test

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/eddy-run/eddy/internal/heapfloor"
)

// TestPercentFor: the percent puts the heap goal at the floor while twice
// the live heap is below it, and is the base percent above.
func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		floor, live uint64
		base, want  int
	}{
		{64 * mib, 4 * mib, 100, 1500},  // goal 4×16 = 64 MiB
		{64 * mib, 3 * mib, 100, 2033},  // goal just under 64 MiB (rounded down)
		{64 * mib, 32 * mib, 100, 100},  // 2×32 is the floor: GOGC's own goal
		{64 * mib, 40 * mib, 100, 100},  // above the floor: GOGC's pacing
		{64 * mib, 16 * mib, 400, 400},  // a base above what the floor needs wins
		{64 * mib, 16 * mib, 50, 300},   // a lower base is raised to the floor
		{64 * mib, 100, 100, 10_000},    // capped
		{64 * mib, 0, 100, 10_000},      // nothing live yet
		{64 * mib, 64 * mib, 100, 100},  // at the floor
		{64 * mib, 128 * mib, 20, 20},   // well above: the base, however low
		{1 * mib, 512 * 1024, 100, 100}, // 2× live is the floor exactly
	} {
		if got := heapfloor.PercentFor(tc.floor, tc.live, tc.base); got != tc.want {
			t.Errorf("PercentFor(%d, %d, %d) = %d, want %d", tc.floor, tc.live, tc.base, got, tc.want)
		}
	}
}

// TestStartTunesEachCycleAndStopRestores: after Start the GC percent in
// force is the one the live heap calls for, it is tuned again after a
// collection, and stop puts back the percent found at Start.
func TestStartTunesEachCycleAndStopRestores(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	tuned := make(chan int, 1)
	defer heapfloor.OnTune(tuned)()
	stop := heapfloor.Start(1 << 30)
	got := <-tuned
	if got <= 150 || heapfloor.Percent() != got {
		t.Fatalf("after Start: tuned %d, in force %d; want a percent above 150 for a 1 GiB floor, in force", got, heapfloor.Percent())
	}
	runtime.GC()
	select {
	case got = <-tuned:
	case <-time.After(time.Minute):
		t.Fatal("no tuning after a collection")
	}
	if heapfloor.Percent() != got {
		t.Fatalf("after a collection: in force %d, tuned %d", heapfloor.Percent(), got)
	}
	stop()
	if p := heapfloor.Percent(); p != 150 {
		t.Fatalf("after stop: percent %d, want 150 back", p)
	}
	runtime.GC() // the armed cleanup runs and must change nothing now
	runtime.GC()
	if p := heapfloor.Percent(); p != 150 {
		t.Fatalf("a collection after stop: percent %d, want 150", p)
	}
}

// TestStartLeavesTheCollectorOff: with GOGC=off (percent -1) Start does
// nothing, and a zero floor does nothing either.
func TestStartLeavesTheCollectorOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	heapfloor.Start(1 << 30)()
	stop := heapfloor.Start(1 << 30)
	if p := heapfloor.Percent(); p != -1 {
		t.Fatalf("Start with the collector off: percent %d, want -1", p)
	}
	stop()
	debug.SetGCPercent(100)
	stop = heapfloor.Start(0)
	if p := heapfloor.Percent(); p != 100 {
		t.Fatalf("Start(0): percent %d, want 100", p)
	}
	stop()
}

// TestStartAgainReplaces: a second Start takes over from the first, and
// its stop restores the percent from before the first.
func TestStartAgainReplaces(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(120))
	first := heapfloor.Start(1 << 30)
	second := heapfloor.Start(2 << 30)
	first() // no longer the running floor: changes nothing
	if p := heapfloor.Percent(); p == 120 {
		t.Fatal("the first stop undid the second Start")
	}
	second()
	if p := heapfloor.Percent(); p != 120 {
		t.Fatalf("after the second stop: percent %d, want 120", p)
	}
}
