package causality

import (
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

func TestNewPark(t *testing.T) {
	t.Parallel()
	d := Effect{Trigger: "ping", ID: "dlv-9", Cause: Cause{Seq: 40, Depth: 16, Op: "patch"}}
	p := NewPark(d)
	if p.Op != changelog.OpPark || p.Type != "eddy.delivery" || p.EntityID != "dlv-9" {
		t.Fatalf("park row = %+v", p)
	}
	if got, want := string(p.Payload), `{"trigger":"ping","depth":17}`; got != want {
		t.Fatalf("payload = %s, want %s", got, want)
	}
	want := store.Provenance{Actor: "engine", Via: "engine", Trigger: "ping", Delivery: "dlv-9", CausedBy: 40, Depth: 17}
	if p.Provenance != want {
		t.Fatalf("provenance = %+v, want %+v", p.Provenance, want)
	}
}

func TestNewFire(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 8, 4, 12, 30, 0, 0, time.FixedZone("CEST", 2*3600))
	f := NewFire("mark-overdue", at)
	if f.Op != changelog.OpFire || f.Type != "eddy.trigger" || f.EntityID != "mark-overdue" {
		t.Fatalf("fire row = %+v", f)
	}
	if got, want := string(f.Payload), `{"scheduledAt":"2026-08-04T10:30:00Z"}`; got != want {
		t.Fatalf("payload = %s, want %s", got, want)
	}
	want := store.Provenance{Actor: "engine", Via: "engine", Trigger: "mark-overdue"}
	if f.Provenance != want {
		t.Fatalf("provenance = %+v, want %+v", f.Provenance, want)
	}
	d := Effect{Trigger: "mark-overdue", ID: "d", Cause: Cause{Seq: 5, Depth: f.Provenance.Depth, Op: f.Op}}
	if d.Depth() != 1 || d.Via() != ViaCron {
		t.Fatalf("delivery of a fire row: depth %d via %s, want 1 via cron", d.Depth(), d.Via())
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
			d := Effect{Trigger: "loop", ID: "d", Cause: cause}
			if dec == Park {
				parks++
				row := NewPark(d)
				cause = Cause{Seq: seq, Depth: row.Provenance.Depth, Op: row.Op}
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
