package changelog_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
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
	inside, out, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := lg.Write(context.Background(), changelog.WriteRequest{Space: "s",
			Mutations:  []changelog.Mutation{{Op: changelog.OpPut, Type: "task", EntityID: "a", Properties: json.RawMessage(`{"n":1}`)}},
			Provenance: store.Provenance{Actor: "owner", Via: "api"},
			Effects: func(context.Context, store.WriteTx, changelog.WriteResult) error {
				close(inside)
				<-out
				return nil
			}})
		done <- err
	}()
	<-inside
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
	close(out)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-idle // closed once the group is done and nothing is queued
	if busy, _ := lg.Busy("s"); busy {
		t.Fatal("busy after the group ended")
	}
}
