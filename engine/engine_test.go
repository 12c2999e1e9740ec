package engine_test

import (
	"testing"

	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// An expr function stamps completedAt when a task moves to done; its
// write records the causing seq and depth 1, and the stances say matched.
func TestStampCompleted(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.function("stamp", `{"kind":"expr","writes":["task"],"code":"patch(\"task\", entity.id, {\"completedAt\": now})"}`)
		e.trigger("stamp-completed", `{"source":{"changes":{"types":["task"],"when":"entity != null && entity.properties.status == 'done' && (before == null || before.properties.status != 'done')"}},"function":"stamp"}`)
		e.write(put("task", "t1", map[string]any{"title": "x", "status": "open"}))
		done := e.write(patch("task", "t1", map[string]any{"status": "done"}))
		head := e.settle()
		if head != done+1 {
			t.Fatalf("head %d, want %d (one stamp row)", head, done+1)
		}
		cs := e.commits(done)
		c := cs[0]
		if c.Actor != "trigger:stamp-completed" || c.Provenance.CausedBy != done || c.Provenance.Depth != 1 {
			t.Fatalf("stamp row: actor %s causedBy %d depth %d", c.Actor, c.Provenance.CausedBy, c.Provenance.Depth)
		}
		if e.get("task", "t1")["completedAt"] == nil {
			t.Fatal("completedAt not stamped")
		}
		st := e.stances(done)["stamp-completed"]
		if st.Stance != triggers.StanceMatched || st.Delivery == nil || st.Delivery.Status != store.DeliverySucceeded || st.Delivery.Attempts != 1 {
			t.Fatalf("stance on %d: %+v", done, st)
		}
		if s := e.stances(done - 1)["stamp-completed"].Stance; s != triggers.StanceNotMatched {
			t.Fatalf("stance on the put: %s", s)
		}
		if s := e.stances(done + 1)["stamp-completed"].Stance; s != triggers.StanceEcho {
			t.Fatalf("stance on its own row: %s", s)
		}
	})
}
