package engine_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// checkPark checks that rows after cause are a chain of n function rows
// (depth 1..n, each caused by the one before) ended by one engine park
// row for a parked delivery of trigger at depth n+1, and returns that
// delivery.
func checkPark(e *env, cause int64, n int, trigger string) engine.DeliveryInfo {
	e.t.Helper()
	rows := e.commits(cause)
	if len(rows) != n+1 {
		e.t.Fatalf("%d rows after %d, want %d function rows and a park row: %+v", len(rows), cause, n, rows)
	}
	prev := cause
	for i, c := range rows[:n] {
		if c.Provenance.Depth != i+1 || c.Provenance.CausedBy != prev || c.Provenance.Root != cause || c.Provenance.Trigger == "" ||
			c.Actor != "trigger:"+c.Provenance.Trigger {
			e.t.Fatalf("row %d of the chain: actor %s provenance %+v", i+1, c.Actor, c.Provenance)
		}
		prev = c.Seq
	}
	park := rows[n]
	if park.Actor != "engine" || park.Op != "park" || park.Type != "eddy.delivery" || len(park.Changes) != 0 {
		e.t.Fatalf("park row %+v", park.Row)
	}
	var payload map[string]any
	if err := json.Unmarshal(park.Payload, &payload); err != nil {
		e.t.Fatal(err)
	}
	if len(payload) != 2 || payload["trigger"] != trigger || payload["depth"] != float64(n+1) {
		e.t.Fatalf("park payload %s, want trigger %s depth %d", park.Payload, trigger, n+1)
	}
	parked := e.deliveries(trigger, store.DeliveryParked)
	if len(parked) != 1 {
		e.t.Fatalf("%d parked deliveries of %s, want 1", len(parked), trigger)
	}
	d := parked[0]
	if d.ID != park.EntityID || d.Seq != prev || d.Depth != n+1 || d.Attempts != 0 {
		e.t.Fatalf("parked delivery %+v, park row %+v", d, park.Row)
	}
	s := e.stances(prev)[trigger]
	if s.Stance != triggers.StanceMatched || s.Delivery == nil || s.Delivery.ID != d.ID || s.Delivery.Status != store.DeliveryParked {
		e.t.Fatalf("stance on the parked row %+v", s)
	}
	return d
}

// Two triggers writing each other's type ping-pong until the depth cap
// parks the chain: at most cap function rows, one park row, then
// nothing. The cap is the space's (16) or a lower one a trigger sets.
func TestPingPongParksAtCap(t *testing.T) {
	cases := []struct {
		name     string
		bCap     string
		rows     int
		parkedBy string
	}{
		{"space cap", "", 16, "a-to-b"},
		{"trigger cap", `,"causalityCap":3`, 3, "b-to-a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bothDrivers(t, func(t *testing.T, open opener) {
				e := newEnv(t, open(t), engine.Options{})
				e.function("to-b", `{"kind":"expr","writes":["b"],"code":"put(\"b\", \"x\", {\"n\": entity.properties.n + 1})"}`)
				e.function("to-a", `{"kind":"expr","writes":["a"],"code":"put(\"a\", \"x\", {\"n\": entity.properties.n + 1})"}`)
				e.trigger("a-to-b", `{"source":{"changes":{"types":["a"]}},"function":"to-b"}`)
				e.trigger("b-to-a", `{"source":{"changes":{"types":["b"]}},"function":"to-a"`+tc.bCap+`}`)
				start := e.write(put("a", "x", map[string]any{"n": 0}))
				head := e.settle()
				checkPark(e, start, tc.rows, tc.parkedBy)
				last := "a"
				if tc.rows%2 == 1 {
					last = "b"
				}
				if n := e.get(last, "x")["n"]; n != float64(tc.rows) {
					t.Fatalf("%s/x has n %v, want %d", last, n, tc.rows)
				}
				e.stillHead(head, 300*time.Millisecond)
				for _, name := range []string{"a-to-b", "b-to-a"} {
					for _, d := range e.deliveries(name) {
						if d.Status != store.DeliverySucceeded && d.Status != store.DeliveryParked {
							t.Fatalf("delivery %+v", d)
						}
					}
				}
			})
		})
	}
}

// Releasing a parked delivery runs it once; its writes are caused by its
// row at the delivery's depth. A release of a delivery that is not parked
// is a conflict.
func TestReleaseParked(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.function("to-b", `{"kind":"expr","writes":["b"],"code":"put(\"b\", entity.id, {\"n\": entity.properties.n + 1})"}`)
		e.function("to-c", `{"kind":"expr","writes":["c"],"code":"put(\"c\", entity.id, {\"n\": entity.properties.n + 1})"}`)
		e.trigger("first", `{"source":{"changes":{"types":["a"]}},"function":"to-b"}`)
		e.trigger("second", `{"source":{"changes":{"types":["b"]}},"function":"to-c","causalityCap":1}`)
		start := e.write(put("a", "x", map[string]any{"n": 0}))
		head := e.settle()
		d := checkPark(e, start, 1, "second")

		if _, err := e.eng.Retry(t.Context(), space, d.ID); problemCode(err) != problem.Conflict {
			t.Fatalf("retry of a parked delivery: %v, want conflict", err)
		}
		released, err := e.eng.Release(t.Context(), space, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if released.Status != store.DeliveryPending || released.ID != d.ID {
			t.Fatalf("released delivery %+v", released)
		}
		if got := e.settle(); got != head+1 {
			t.Fatalf("head %d after release, want %d: %+v", got, head+1, e.commits(head))
		}
		c := e.commits(head)[0]
		if c.Type != "c" || c.Actor != "trigger:second" || c.Provenance.CausedBy != d.Seq || c.Provenance.Depth != 2 || c.Provenance.Delivery != d.ID {
			t.Fatalf("released delivery's row: actor %s type %s provenance %+v", c.Actor, c.Type, c.Provenance)
		}
		if n := e.get("c", "x")["n"]; n != float64(2) {
			t.Fatalf("c/x has n %v, want 2", n)
		}
		if got := e.delivery("second", d.Seq); got.Status != store.DeliverySucceeded || got.Attempts != 1 {
			t.Fatalf("released delivery after running %+v", got)
		}
		_, err = e.eng.Release(t.Context(), space, d.ID)
		if problemCode(err) != problem.Conflict {
			t.Fatalf("second release: %v, want conflict", err)
		}
		if msg := err.Error(); msg == "" || !strings.Contains(msg, string(store.DeliverySucceeded)) {
			t.Fatalf("conflict %q does not name the status", msg)
		}
	})
}

// Releasing the delivery a ping-pong parked at the space cap lets the
// chain take one more step, whose own delivery parks again quietly (the
// chain already has its park row); every row's chain can still be walked
// to its root.
func TestReleaseAtTheCap(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		e.function("to-b", `{"kind":"expr","writes":["b"],"code":"put(\"b\", \"x\", {\"n\": entity.properties.n + 1})"}`)
		e.function("to-a", `{"kind":"expr","writes":["a"],"code":"put(\"a\", \"x\", {\"n\": entity.properties.n + 1})"}`)
		e.trigger("a-to-b", `{"source":{"changes":{"types":["a"]}},"function":"to-b"}`)
		e.trigger("b-to-a", `{"source":{"changes":{"types":["b"]}},"function":"to-a"}`)
		start := e.write(put("a", "x", map[string]any{"n": 0}))
		head := e.settle()
		d := checkPark(e, start, causality.DefaultCap, "a-to-b")
		if _, err := e.eng.Release(t.Context(), space, d.ID); err != nil {
			t.Fatal(err)
		}
		end := e.settle()
		rows := e.commits(head)
		if len(rows) != 1 || rows[0].Actor != "trigger:a-to-b" || rows[0].Provenance.Depth != causality.DefaultCap+1 {
			t.Fatalf("rows after the release: %+v", rows)
		}
		if got := e.delivery("a-to-b", d.Seq); got.Status != store.DeliverySucceeded {
			t.Fatalf("released delivery %+v", got)
		}
		if n := len(e.deliveries("b-to-a", store.DeliveryParked)); n != 1 {
			t.Fatalf("%d parked deliveries of b-to-a, want 1", n)
		}
		for seq := head + 1; seq <= end; seq++ {
			if _, err := causality.Walk(t.Context(), e.st, space, seq, causality.WalkLimit); err != nil {
				t.Errorf("walk the causes of row %d (depth %d): %v", seq, e.commits(seq - 1)[0].Provenance.Depth, err)
			}
		}
	})
}
