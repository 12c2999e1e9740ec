package storetest

import (
	"slices"
	"testing"
	"time"
)

// testProcesses checks ProcessBeat and ProcessGone: a beat keeps a
// process live through now+ttl inclusive, the list is sorted bytewise and
// includes the caller, and a process gone is no longer listed.
func testProcesses(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	const ttl = 10 * time.Second
	beat := func(what, owner string, at int, want ...string) {
		t.Helper()
		got, err := h.ts.ProcessBeat(h.ctx, owner, ts(at), ttl)
		if err != nil || got == nil || !slices.Equal(got, want) {
			t.Fatalf("%s: beat %s at %d = %q, %v; want %q", what, owner, at, got, err, want)
		}
	}
	beat("alone", "b", 0, "b")
	beat("second", "a", 1, "a", "b")
	beat("bytewise", "B", 2, "B", "a", "b")
	beat("renew", "b", 5, "B", "a", "b")
	beat("expiry is inclusive", "b", 11, "B", "a", "b") // a lives through 11
	beat("one expired", "b", 12, "B", "b")              // B through 12
	beat("both expired", "b", 13, "b")
	beat("back", "a", 14, "a", "b")

	if err := h.ts.ProcessGone(h.ctx, "b"); err != nil {
		t.Fatalf("gone b: %v", err)
	}
	beat("after gone", "a", 15, "a")
	if err := h.ts.ProcessGone(h.ctx, "nobody"); err != nil {
		t.Fatalf("gone nobody: %v", err)
	}
	if _, err := h.ts.ProcessBeat(h.ctx, "", ts(16), ttl); err == nil {
		t.Fatal("a beat of an empty owner was accepted")
	}
	// Any time zone and precision: the suite's epoch is CEST with
	// sub-microsecond nanoseconds.
	got, err := h.ts.ProcessBeat(h.ctx, "z", epoch0.Add(20*time.Second), ttl)
	if err != nil || !slices.Equal(got, []string{"a", "z"}) {
		t.Fatalf("beat at a zoned time = %q, %v", got, err)
	}
}
