package triggers

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// gt builds a trigger from a compact spec: "changes" sources take the
// types, ops and actor lists given; cron sources take none.
type gt struct {
	name, function string
	cron           bool
	types, ops     []string
	actors, not    []string
	echo           bool
}

func (s gt) build(t *testing.T) *Trigger {
	t.Helper()
	src := `{"cron": {"schedule": "@every 1m"}}`
	if !s.cron {
		src = fmt.Sprintf(`{"changes": {"types": %s, "ops": %s, "actors": %s, "excludeActors": %s}}`,
			jsonList(s.types), jsonList(s.ops), jsonList(s.actors), jsonList(s.not))
	}
	body := fmt.Sprintf(`{"source": %s, "function": %q, "echo": %v}`, src, s.function, s.echo)
	tr, err := ParseTrigger(s.name, []byte(body))
	if err != nil {
		t.Fatalf("parse %s: %v", body, err)
	}
	return tr
}

func jsonList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

func TestFeeds(t *testing.T) {
	t.Parallel()
	from := gt{name: "a", function: "fa", types: []string{"task"}}
	tests := []struct {
		name   string
		writes []string
		to     gt
		want   bool
	}{
		{"matching type", []string{"task"}, gt{name: "b", function: "f", types: []string{"task"}}, true},
		{"no types admits all", []string{"note"}, gt{name: "b", function: "f"}, true},
		{"other type", []string{"note"}, gt{name: "b", function: "f", types: []string{"task"}}, false},
		{"no writes", nil, gt{name: "b", function: "f"}, false},
		{"write op", []string{"task"}, gt{name: "b", function: "f", ops: []string{"unlink"}}, true},
		{"fire only", []string{"task"}, gt{name: "b", function: "f", ops: []string{"fire"}}, false},
		{"park and merge only", []string{"task"}, gt{name: "b", function: "f", ops: []string{"merge", "park", "split"}}, false},
		{"cron", []string{"task"}, gt{name: "b", function: "f", cron: true}, false},
		{"actors admit", []string{"task"}, gt{name: "b", function: "f", actors: []string{"trigger:a"}}, true},
		{"actors refuse", []string{"task"}, gt{name: "b", function: "f", actors: []string{"owner"}}, false},
		{"excluded", []string{"task"}, gt{name: "b", function: "f", not: []string{"trigger:a"}}, false},
		{"excluded other", []string{"task"}, gt{name: "b", function: "f", not: []string{"trigger:c"}}, true},
		{"self without echo", []string{"task"}, gt{name: "a", function: "fa"}, false},
		{"self with echo", []string{"task"}, gt{name: "a", function: "fa", echo: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Feeds(from.build(t), tt.writes, tt.to.build(t)); got != tt.want {
				t.Errorf("Feeds = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCyclesThrough(t *testing.T) {
	t.Parallel()
	writes := map[string][]string{"w-task": {"task"}, "w-note": {"note"}, "w-both": {"note", "task"}}
	tests := []struct {
		name  string
		specs []gt
		saved string
		want  []string // cycles joined with ">"
	}{
		{
			name:  "none",
			specs: []gt{{name: "a", function: "w-note", types: []string{"task"}}},
			saved: "a",
		},
		{
			name:  "self loop without echo",
			specs: []gt{{name: "a", function: "w-task", types: []string{"task"}}},
			saved: "a",
		},
		{
			name:  "self loop with echo",
			specs: []gt{{name: "a", function: "w-task", types: []string{"task"}, echo: true}},
			saved: "a",
			want:  []string{"a>a"},
		},
		{
			name: "two triggers",
			specs: []gt{
				{name: "a", function: "w-note", types: []string{"task"}},
				{name: "b", function: "w-task", types: []string{"note"}},
			},
			saved: "b",
			want:  []string{"b>a>b"},
		},
		{
			name: "cycle not through the saved trigger",
			specs: []gt{
				{name: "a", function: "w-note", types: []string{"task"}},
				{name: "b", function: "w-task", types: []string{"note"}},
				{name: "c", function: "w-task", types: []string{"user"}},
			},
			saved: "c",
		},
		{
			name: "several, in order",
			specs: []gt{
				{name: "a", function: "w-both", types: []string{"task"}},
				{name: "b", function: "w-task", types: []string{"note"}},
				{name: "c", function: "w-task"},
			},
			saved: "a",
			want:  []string{"a>b>a", "a>b>c>a", "a>c>a"},
		},
		{
			name: "cron has no incoming edge",
			specs: []gt{
				{name: "a", function: "w-task", cron: true},
				{name: "b", function: "w-task", types: []string{"task"}},
			},
			saved: "a",
		},
		{
			name: "function without writes",
			specs: []gt{
				{name: "a", function: "unknown", types: []string{"task"}},
				{name: "b", function: "w-task"},
			},
			saved: "a",
		},
		{
			name:  "unknown trigger",
			specs: []gt{{name: "a", function: "w-task", echo: true}},
			saved: "zz",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := make([]*Trigger, len(tt.specs))
			for i, s := range tt.specs {
				ts[i] = s.build(t)
			}
			cycles, truncated := NewGraph(ts, writes).CyclesThrough(tt.saved)
			got := make([]string, len(cycles))
			for i, c := range cycles {
				got[i] = strings.Join(c, ">")
			}
			if truncated || !slices.Equal(got, tt.want) {
				t.Errorf("cycles = %q (truncated %v), want %q", got, truncated, tt.want)
			}
		})
	}
}

func TestCycleWarningsTruncated(t *testing.T) {
	t.Parallel()
	// A complete graph on 8 triggers has far more than MaxCycles cycles
	// through each node.
	var ts []*Trigger
	for i := range 8 {
		ts = append(ts, gt{name: fmt.Sprintf("t%d", i), function: "w"}.build(t))
	}
	ws := CycleWarnings(ts, map[string][]string{"w": {"task"}}, "t0")
	if len(ws) != MaxCycles+1 {
		t.Fatalf("got %d warnings, want %d", len(ws), MaxCycles+1)
	}
	if ws[0].Code != WarningCycle || strings.Join(ws[0].Cycle, ">") != "t0>t1>t0" {
		t.Errorf("first warning = %+v", ws[0])
	}
	last := ws[MaxCycles]
	if last.Cycle != nil || !strings.Contains(last.Message, "there may be more") {
		t.Errorf("last warning = %+v", last)
	}
}

func TestCycleWarningsMessages(t *testing.T) {
	t.Parallel()
	ts := []*Trigger{
		gt{name: "a", function: "w", echo: true}.build(t),
	}
	ws := CycleWarnings(ts, map[string][]string{"w": {"task"}}, "a")
	if len(ws) != 1 || !strings.Contains(ws[0].Message, "echo is on") {
		t.Fatalf("warnings = %+v", ws)
	}
	ws = CycleWarnings(ts, nil, "a")
	if ws == nil || len(ws) != 0 {
		t.Fatalf("warnings without writes = %#v, want empty and non-nil", ws)
	}
	g := NewGraph(append(ts, gt{name: "b", function: "w"}.build(t)), map[string][]string{"w": {"task"}})
	if got := g.Next("a"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Next(a) = %q", got)
	}
}
