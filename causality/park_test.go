package causality

import (
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

func TestNewPark(t *testing.T) {
	t.Parallel()
	d := Delivery{Trigger: "ping", ID: "dlv-9", Cause: Cause{Seq: 40, Depth: 16, Op: "patch"}}
	p := NewPark(d)
	if p.Actor != "engine" || p.Op != "park" || p.Type != "eddy.delivery" || p.EntityID != "dlv-9" {
		t.Fatalf("park row = %+v", p)
	}
	if got, want := string(p.Payload), `{"trigger":"ping","depth":17}`; got != want {
		t.Fatalf("payload = %s, want %s", got, want)
	}
	want := store.Provenance{Actor: "engine", Via: "engine", Trigger: "ping", Delivery: "dlv-9", CausedBy: 40, Depth: 17}
	if p.Provenance != want {
		t.Fatalf("provenance = %+v, want %+v", p.Provenance, want)
	}

	ts := time.Date(2026, 8, 4, 10, 0, 0, 183742000, time.UTC)
	c := p.Commit(41, ts)
	if c.Seq != 41 || !c.TS.Equal(ts) || c.Op != "park" || c.Type != "eddy.delivery" || c.EntityID != "dlv-9" || len(c.Changes) != 0 {
		t.Fatalf("commit = %+v", c)
	}
	if c.Receipt.Status != store.ReceiptApplied || c.Receipt.Seq != 41 || c.Provenance != want {
		t.Fatalf("commit receipt/provenance = %+v / %+v", c.Receipt, c.Provenance)
	}
}

// TestParkNeverCausesPark runs the loop an executor runs for a trigger
// that matches its own park rows: whatever the caps, a park row's
// deliveries are parked quietly, so the second park row never comes.
func TestParkNeverCausesPark(t *testing.T) {
	t.Parallel()
	for _, caps := range [][2]int{{0, 0}, {16, 0}, {16, 1}, {4, 2}, {1, 1}} {
		cause := Cause{Seq: 1}
		seq := int64(1)
		parks := 0
		for step := 0; step < 100; step++ {
			dec := Decide(cause, caps[0], caps[1])
			if dec == ParkQuietly {
				break
			}
			seq++
			d := Delivery{Trigger: "loop", ID: "d", Cause: cause}
			if dec == Park {
				parks++
				c := NewPark(d).Commit(seq, time.Now())
				cause = CauseOf(&c)
				continue
			}
			cause = Cause{Seq: seq, Depth: d.Depth(), Op: "patch"}
		}
		if parks != 1 {
			t.Errorf("caps %v: %d park rows, want exactly 1", caps, parks)
		}
		if Decide(cause, caps[0], caps[1]) != ParkQuietly {
			t.Errorf("caps %v: the loop did not end in a quiet park", caps)
		}
	}
}
