package harness

import (
	"context"
	"runtime/debug"
	"testing"

	"github.com/eddy-run/eddy/internal/heapfloor"
)

// TestAsServed: eddy's measurement runs with serve's heap floor (a GC
// percent above the default for this small heap), and the percent in
// force before comes back after it; with GOGC set, nothing changes.
func TestAsServed(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	var inside int
	err := AsServed(func(context.Context) error {
		inside = heapfloor.Percent()
		return nil
	})(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if inside <= 100 {
		t.Errorf("inside AsServed: GC percent %d, want above 100 (the heap floor)", inside)
	}
	if p := heapfloor.Percent(); p != 100 {
		t.Errorf("after AsServed: GC percent %d, want 100 back", p)
	}
	t.Setenv("GOGC", "100")
	_ = AsServed(func(context.Context) error {
		inside = heapfloor.Percent()
		return nil
	})(t.Context())
	if inside != 100 {
		t.Errorf("GOGC set: GC percent %d inside AsServed, want 100", inside)
	}
}
