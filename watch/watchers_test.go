package watch

import (
	"testing"
	"time"
)

// TestWatchers checks that Watchers counts the open streams.
func TestWatchers(t *testing.T) {
	t.Parallel()
	// A short heartbeat: an idle stream notices its client left when it
	// next writes.
	e := newEnv(t, drivers[0].open(t), Options{Heartbeat: 20 * time.Millisecond})
	if n := e.hub.Watchers(); n != 0 {
		t.Fatalf("watchers before any stream = %d", n)
	}
	a, b := e.open("", nil), e.open("", nil)
	a.must()
	b.must()
	if n := e.hub.Watchers(); n != 2 {
		t.Fatalf("watchers with two streams = %d, want 2", n)
	}
	a.close()
	deadline := time.Now().Add(10 * time.Second)
	for e.hub.Watchers() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("watchers after one stream closed = %d, want 1", e.hub.Watchers())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
