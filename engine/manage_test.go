package engine

import (
	"testing"

	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// TestFingerprintHoldsTheRoundsLeases: the fingerprint a round records
// from the states it read and the leases it took (withHeld) is the one
// the next look for changes computes from the store's states after the
// round, so that look runs no second round; a lease taken elsewhere
// since still shows as a change.
func TestFingerprintHoldsTheRoundsLeases(t *testing.T) {
	t.Parallel()
	cat := &catalog{
		triggers:  map[string]*triggers.Trigger{"a": {Function: "f"}, "b": {Function: "f"}, "c": {Function: "f"}},
		functions: map[string]*functions.Function{"f": {}},
	}
	before := []store.TriggerState{
		{Trigger: "b", Owner: "", Epoch: 3},      // free: this round takes it
		{Trigger: "c", Owner: "other", Epoch: 7}, // another process's
		{Trigger: "a", Owner: "me", Epoch: 1},    // renewed
	}
	held := map[string]store.TriggerState{
		"a": {Trigger: "a", Owner: "me", Epoch: 1},
		"b": {Trigger: "b", Owner: "me", Epoch: 4},
		"d": {Trigger: "d", Owner: "me", Epoch: 1}, // its state made this round
	}
	after := []store.TriggerState{
		{Trigger: "a", Owner: "me", Epoch: 1},
		{Trigger: "b", Owner: "me", Epoch: 4},
		{Trigger: "c", Owner: "other", Epoch: 7},
		{Trigger: "d", Owner: "me", Epoch: 1},
	}
	recorded := fingerprint(cat, withHeld(before, held))
	if got := fingerprint(cat, after); got != recorded {
		t.Fatalf("after the round the states fingerprint as\n%s\nthe round recorded\n%s", got, recorded)
	}
	if fingerprint(cat, before) == recorded {
		t.Fatal("the states before the round fingerprint as after it")
	}
	after[2].Owner, after[2].Epoch = "third", 8
	if fingerprint(cat, after) == recorded {
		t.Fatal("a lease taken elsewhere since the round does not show as a change")
	}
}
