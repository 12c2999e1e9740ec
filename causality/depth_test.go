package causality

import (
	"encoding/json"
	"testing"

	"github.com/eddy-run/eddy/store"
)

func TestCap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		space, trigger, want int
	}{
		{0, 0, DefaultCap},
		{-1, 0, DefaultCap},
		{16, 0, 16},
		{16, 4, 4},
		{16, 16, 16},
		{16, 30, 16}, // a trigger may only lower the cap
		{8, 12, 8},
		{0, 3, 3},
		{5, -2, 5},
	}
	for _, tt := range tests {
		if got := Cap(tt.space, tt.trigger); got != tt.want {
			t.Errorf("Cap(%d, %d) = %d, want %d", tt.space, tt.trigger, got, tt.want)
		}
	}
}

func TestExceeds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		depth, space, trigger int
		want                  bool
	}{
		{0, 0, 0, false},
		{16, 0, 0, false},
		{17, 0, 0, true},
		{3, 16, 3, false},
		{4, 16, 3, true},
		{17, 16, 40, true},
		{9, 8, 0, true},
	}
	for _, tt := range tests {
		if got := Exceeds(tt.depth, tt.space, tt.trigger); got != tt.want {
			t.Errorf("Exceeds(%d, %d, %d) = %v, want %v", tt.depth, tt.space, tt.trigger, got, tt.want)
		}
	}
}

func TestNextAndCauseOf(t *testing.T) {
	t.Parallel()
	c := &store.Commit{Row: store.Row{Seq: 42, Op: "patch"}, Provenance: store.Provenance{Depth: 3, CausedBy: 40}}
	cause := CauseOf(c)
	if cause != (Cause{Seq: 42, Depth: 3, Op: "patch"}) {
		t.Fatalf("CauseOf = %+v", cause)
	}
	if got := Next(cause); got != 4 {
		t.Fatalf("Next = %d, want 4", got)
	}
	if got := Next(Cause{Seq: 1}); got != 1 {
		t.Fatalf("Next of an API write = %d, want 1", got)
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		cause          Cause
		space, trigger int
		want           Decision
	}{
		{"api write", Cause{Seq: 1, Depth: 0, Op: "put"}, 0, 0, Run},
		{"at the cap", Cause{Seq: 9, Depth: 15, Op: "patch"}, 0, 0, Run},
		{"past the cap", Cause{Seq: 9, Depth: 16, Op: "patch"}, 0, 0, Park},
		{"past a trigger cap", Cause{Seq: 9, Depth: 2, Op: "patch"}, 0, 2, Park},
		{"cron fire", Cause{Seq: 3, Depth: 0, Op: "fire"}, 0, 0, Run},
		{"park row past the cap", Cause{Seq: 20, Depth: 17, Op: "park"}, 0, 0, ParkQuietly},
		{"shallow park row", Cause{Seq: 20, Depth: 3, Op: "park"}, 0, 0, Run},
		{"shallow park row, low cap", Cause{Seq: 20, Depth: 3, Op: "park"}, 0, 3, ParkQuietly},
	}
	for _, tt := range tests {
		if got := Decide(tt.cause, tt.space, tt.trigger); got != tt.want {
			t.Errorf("%s: Decide = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDecisionJSON(t *testing.T) {
	t.Parallel()
	for _, d := range []Decision{Run, Park, ParkQuietly} {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != `"`+d.String()+`"` {
			t.Errorf("marshal %v = %s", d, b)
		}
		var back Decision
		if err := json.Unmarshal(b, &back); err != nil || back != d {
			t.Errorf("unmarshal %s = %v, %v", b, back, err)
		}
	}
	if _, err := json.Marshal(Decision(9)); err == nil {
		t.Error("marshal of an unknown decision succeeded")
	}
	var d Decision
	if err := json.Unmarshal([]byte(`"spin"`), &d); err == nil {
		t.Error("unmarshal of an unknown name succeeded")
	}
	if got := Decision(9).String(); got != "Decision(9)" {
		t.Errorf("String = %q", got)
	}
}

func TestDeliveryProvenance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    Effect
		want store.Provenance
	}{
		{"change", Effect{Trigger: "stamp", ID: "d1", Cause: Cause{Seq: 7, Depth: 2, Op: "patch"}},
			store.Provenance{Actor: "trigger:stamp", Via: "trigger", RequestID: "rq", Trigger: "stamp", Delivery: "d1", CausedBy: 7, Depth: 3, Traceparent: "tp"}},
		{"cron", Effect{Trigger: "nightly", ID: "d2", Cause: Cause{Seq: 3, Op: "fire"}},
			store.Provenance{Actor: "trigger:nightly", Via: "cron", RequestID: "rq", Trigger: "nightly", Delivery: "d2", CausedBy: 3, Depth: 1, Traceparent: "tp"}},
	}
	for _, tt := range tests {
		if got := tt.d.Provenance("rq", "tp"); got != tt.want {
			t.Errorf("%s: Provenance = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
