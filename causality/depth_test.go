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
	if cause != (Cause{Seq: 42, Depth: 3, Op: "patch", Root: 40}) {
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
		v := Decide(tt.cause, Limits{SpaceCap: tt.space, TriggerCap: tt.trigger}, Spent{})
		if v.Decision != tt.want {
			t.Errorf("%s: Decide = %v, want %v", tt.name, v.Decision, tt.want)
		}
		if want := map[bool]string{true: "", false: LimitDepth}[tt.want == Run]; v.Limit != want {
			t.Errorf("%s: limit %q, want %q", tt.name, v.Limit, want)
		}
	}
}

func TestDecideBudget(t *testing.T) {
	t.Parallel()
	entity := Cause{Seq: 50, Depth: 3, Op: "patch", Root: 7}
	tests := []struct {
		name   string
		cause  Cause
		limits Limits
		spent  Spent
		want   Decision
		limit  string
		budget int
	}{
		{"fresh root", entity, Limits{}, Spent{}, Run, "", DefaultBudget},
		{"one row short", entity, Limits{}, Spent{Rows: DefaultBudget - 1}, Run, "", DefaultBudget},
		{"at the budget: first park", entity, Limits{}, Spent{Rows: DefaultBudget}, Park, LimitBudget, DefaultBudget},
		{"past the budget: first park", entity, Limits{}, Spent{Rows: DefaultBudget + 40}, Park, LimitBudget, DefaultBudget},
		{"second park is quiet", entity, Limits{}, Spent{Rows: DefaultBudget, Parked: true}, ParkQuietly, LimitBudget, DefaultBudget},
		{"trigger budget lower", entity, Limits{TriggerBudget: 10}, Spent{Rows: 10}, Park, LimitBudget, 10},
		{"trigger budget higher is ignored", entity, Limits{SpaceBudget: 20, TriggerBudget: 50}, Spent{Rows: 20}, Park, LimitBudget, 20},
		{"space budget", entity, Limits{SpaceBudget: 5}, Spent{Rows: 4}, Run, "", 5},
		{"caused by a park row", Cause{Seq: 60, Depth: 4, Op: "park", Root: 7}, Limits{}, Spent{Rows: DefaultBudget}, ParkQuietly, LimitBudget, DefaultBudget},
		{"depth first", Cause{Seq: 60, Depth: 16, Op: "patch", Root: 7}, Limits{}, Spent{Rows: DefaultBudget}, Park, LimitDepth, DefaultBudget},
		{"depth past, budget parked", Cause{Seq: 60, Depth: 16, Op: "patch", Root: 7}, Limits{}, Spent{Rows: DefaultBudget, Parked: true}, Park, LimitDepth, DefaultBudget},
	}
	for _, tt := range tests {
		v := Decide(tt.cause, tt.limits, tt.spent)
		if v.Decision != tt.want || v.Limit != tt.limit || v.Budget != tt.budget || v.Root != 7 || v.Rows != tt.spent.Rows {
			t.Errorf("%s: Decide = %+v, want %v limit %q budget %d", tt.name, v, tt.want, tt.limit, tt.budget)
		}
	}
}

func TestVerdictReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    Verdict
		want string
	}{
		{Verdict{Decision: Run}, ""},
		{Verdict{Decision: Park, Limit: LimitDepth, Depth: 17, Cap: 16}, "depth 17 is past the causality cap 16"},
		{Verdict{Decision: ParkQuietly, Limit: LimitBudget, Root: 42, Rows: 1000, Budget: 1000}, "root 42 caused 1000 rows, the causal budget is 1000"},
	}
	for _, tt := range tests {
		if got := tt.v.Reason(); got != tt.want {
			t.Errorf("Reason(%+v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	tests := []struct{ space, trigger, want int }{
		{0, 0, DefaultBudget}, {-1, 0, DefaultBudget}, {500, 0, 500}, {500, 20, 20},
		{500, 900, 500}, {0, 3, 3}, {5, -2, 5},
	}
	for _, tt := range tests {
		if got := Budget(tt.space, tt.trigger); got != tt.want {
			t.Errorf("Budget(%d, %d) = %d, want %d", tt.space, tt.trigger, got, tt.want)
		}
	}
}

func TestRootOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		prov store.Provenance
		want int64
	}{
		{"api write is its own root", store.Provenance{Via: "api"}, 42},
		{"recorded root", store.Provenance{CausedBy: 40, Root: 3, Depth: 5}, 3},
		{"legacy row: nearest ancestor", store.Provenance{CausedBy: 40, Depth: 5}, 40},
	}
	for _, tt := range tests {
		c := &store.Commit{Row: store.Row{Seq: 42, Op: "patch"}, Provenance: tt.prov}
		if got := RootOf(c); got != tt.want {
			t.Errorf("%s: RootOf = %d, want %d", tt.name, got, tt.want)
		}
		if got := CauseOf(c).RootSeq(); got != tt.want {
			t.Errorf("%s: CauseOf(c).RootSeq() = %d, want %d", tt.name, got, tt.want)
		}
	}
	d := Effect{Trigger: "t", ID: "d", Cause: Cause{Seq: 9, Depth: 0}}
	if p := d.Provenance("", ""); p.Root != 9 || p.CausedBy != 9 {
		t.Fatalf("provenance of a root's delivery = %+v, want root 9", p)
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
		{"change", Effect{Trigger: "stamp", ID: "d1", Cause: Cause{Seq: 7, Depth: 2, Op: "patch", Root: 1}},
			store.Provenance{Actor: "trigger:stamp", Via: "trigger", RequestID: "rq", Trigger: "stamp", Delivery: "d1", CausedBy: 7, Root: 1, Depth: 3, Traceparent: "tp"}},
		{"cron", Effect{Trigger: "nightly", ID: "d2", Cause: Cause{Seq: 3, Op: "fire"}},
			store.Provenance{Actor: "trigger:nightly", Via: "cron", RequestID: "rq", Trigger: "nightly", Delivery: "d2", CausedBy: 3, Root: 3, Depth: 1, Traceparent: "tp"}},
	}
	for _, tt := range tests {
		if got := tt.d.Provenance("rq", "tp"); got != tt.want {
			t.Errorf("%s: Provenance = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
