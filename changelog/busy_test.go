package changelog_test

import (
	"encoding/json"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store/storetest"
)

// TestBusy: a space is busy while a group of its writes runs, its idle
// channel closes once none is left, and a space never written is not
// busy.
func TestBusy(t *testing.T) {
	t.Parallel()
	lg, _ := newLog(t, openSQLite(t))
	if busy, _ := lg.Busy("s"); busy {
		t.Fatal("a space never written is busy")
	}
	release, wait := storetest.HoldGroup(t, lg, "s",
		changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: "a", Properties: json.RawMessage(`{"n":1}`)})
	busy, idle := lg.Busy("s")
	if !busy || idle == nil {
		t.Fatalf("Busy during a group = %v, %v", busy, idle)
	}
	if again, idle2 := lg.Busy("s"); !again || idle2 != idle {
		t.Fatal("a second Busy during the group got another idle channel")
	}
	select {
	case <-idle:
		t.Fatal("idle closed while the group runs")
	default:
	}
	release()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	<-idle // closed once the group is done and nothing is queued
	if busy, _ := lg.Busy("s"); busy {
		t.Fatal("busy after the group ended")
	}
}
