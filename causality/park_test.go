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
	p := NewPark(d, Decide(d.Cause, Limits{}, Spent{}))
	if p.Op != changelog.OpPark || p.Type != "eddy.delivery" || p.EntityID != "dlv-9" {
		t.Fatalf("park row = %+v", p)
	}
	if got, want := string(p.Payload), `{"trigger":"ping","depth":17}`; got != want {
		t.Fatalf("payload = %s, want %s", got, want)
	}
	want := store.Provenance{Actor: "engine", Via: "engine", Trigger: "ping", Delivery: "dlv-9", CausedBy: 40, Root: 40, Depth: 17}
	if p.Provenance != want {
		t.Fatalf("provenance = %+v, want %+v", p.Provenance, want)
	}
}

func TestNewParkBudget(t *testing.T) {
	t.Parallel()
	d := Effect{Trigger: "fan", ID: "dlv-3", Cause: Cause{Seq: 80, Depth: 5, Op: "put", Root: 2}}
	v := Decide(d.Cause, Limits{TriggerBudget: 30}, Spent{Rows: 31})
	if v.Decision != Park || v.Limit != LimitBudget {
		t.Fatalf("verdict = %+v", v)
	}
	p := NewPark(d, v)
	if got, want := string(p.Payload), `{"trigger":"fan","depth":6,"limit":"budget","budget":30,"rows":31}`; got != want {
		t.Fatalf("payload = %s, want %s", got, want)
	}
	if p.Provenance.Root != 2 || p.Provenance.CausedBy != 80 {
		t.Fatalf("provenance = %+v, want root 2 causedBy 80", p.Provenance)
	}
}

// TestBudgetParkNeverFloods runs a fan-out under a budget: whatever the
// order, a root gets one budget park row, and a park row's deliveries
// park quietly.
func TestBudgetParkNeverFloods(t *testing.T) {
	t.Parallel()
	l := Limits{TriggerBudget: 10}
	spent := Spent{}
	parks := 0
	for i := 0; i < 100; i++ {
		c := Cause{Seq: int64(10 + i), Depth: 2, Op: "put", Root: 1}
		v := Decide(c, l, spent)
		switch v.Decision {
		case Run:
			spent.Rows += 3
		case Park:
			parks++
			spent.Parked = true
			row := NewPark(Effect{Trigger: "fan", ID: "d", Cause: c}, v)
			pc := Cause{Seq: 500, Depth: row.Provenance.Depth, Op: row.Op, Root: row.Provenance.Root}
			if got := Decide(pc, l, Spent{Rows: spent.Rows}).Decision; got != ParkQuietly {
				t.Fatalf("delivery of a budget park row: %v, want park_quietly", got)
			}
		}
	}
	if parks != 1 || spent.Rows != 12 {
		t.Fatalf("%d park rows after %d rows, want 1 after 12", parks, spent.Rows)
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
			v := Decide(cause, Limits{SpaceCap: caps[0], TriggerCap: caps[1]}, Spent{})
			dec := v.Decision
			if dec == ParkQuietly {
				break
			}
			seq++
			d := Effect{Trigger: "loop", ID: "d", Cause: cause}
			if dec == Park {
				parks++
				row := NewPark(d, v)
				cause = Cause{Seq: seq, Depth: row.Provenance.Depth, Op: row.Op}
				continue
			}
			cause = Cause{Seq: seq, Depth: d.Depth(), Op: "patch"}
		}
		if parks != 1 {
			t.Errorf("caps %v: %d park rows, want exactly 1", caps, parks)
		}
		if Decide(cause, Limits{SpaceCap: caps[0], TriggerCap: caps[1]}, Spent{}).Decision != ParkQuietly {
			t.Errorf("caps %v: the loop did not end in a quiet park", caps)
		}
	}
}
