package harness

import (
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/internal/gcpace"
	"github.com/eddy-run/eddy/internal/polltest"
)

// loaded allocates 256 MiB of garbage as fast as it goes, collects and
// returns the GC percent in force.
func loaded() int {
	var keep []byte
	for range 64 << 10 {
		keep = make([]byte, 4096)
	}
	runtime.KeepAlive(keep)
	runtime.GC()
	return gcpace.Percent()
}

// TestAsServed: eddy's measurement runs with serve's pacer (a GC percent
// above the default under load), and the percent in force before comes
// back after it; with GOGC set, nothing changes.
func TestAsServed(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	err := AsServed(func(context.Context) error {
		polltest.Until(t, "a GC percent above 100 under load", func() bool { return loaded() > 100 })
		return nil
	})(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if p := gcpace.Percent(); p != 100 {
		t.Errorf("after AsServed: GC percent %d, want 100 back", p)
	}
	t.Setenv("GOGC", "100")
	var inside int
	_ = AsServed(func(context.Context) error {
		inside = loaded()
		return nil
	})(t.Context())
	if inside != 100 {
		t.Errorf("GOGC set: GC percent %d inside AsServed under load, want 100", inside)
	}
}

// TestAsServedIf: a peer's measurement keeps the runtime's pacing under
// load; eddy's gets the pacer.
func TestAsServedIf(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	var peer int
	_ = AsServedIf(false, func(context.Context) error {
		peer = loaded()
		return nil
	})(t.Context())
	if peer != 100 {
		t.Errorf("peer: GC percent %d under load, want the default 100", peer)
	}
	err := AsServedIf(true, func(context.Context) error {
		polltest.Until(t, "a GC percent above 100 under load", func() bool { return loaded() > 100 })
		return nil
	})(t.Context())
	if err != nil {
		t.Fatal(err)
	}
}

// TestServedNoteNamesThePacersSettings: the note follows gcpace's
// constants.
func TestServedNoteNamesThePacersSettings(t *testing.T) {
	for _, want := range []string{gcpace.DefaultMinInterval.String(), "64 MiB"} {
		if !strings.Contains(ServedNote, want) {
			t.Errorf("ServedNote lacks %q: %s", want, ServedNote)
		}
	}
}
