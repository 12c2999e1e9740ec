package durable

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
)

func TestAnswerMeasuresEachCommand(t *testing.T) {
	t.Parallel()
	var ops atomic.Int64
	in := instance{op: func(context.Context, int64) error { ops.Add(1); return nil }}
	var out strings.Builder
	err := answer(context.Background(), in, strings.NewReader("measure 20ms\nmeasure 20ms\n"), &out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || lines[0] != "ready" {
		t.Fatalf("answer printed %q; want ready and two results", lines)
	}
	var sum float64
	for _, l := range lines[1:] {
		j, ok := strings.CutPrefix(l, "result ")
		if !ok {
			t.Fatalf("line %q; want a result", l)
		}
		var r round
		if err := json.Unmarshal([]byte(j), &r); err != nil {
			t.Fatal(err)
		}
		for _, w := range writerCounts {
			if r.Rate[w] <= 0 {
				t.Fatalf("round %s: no rate at %d writers", j, w)
			}
			sum += r.Rate[w] * 0.02
		}
	}
	if float64(ops.Load()) < sum*0.5 {
		t.Fatalf("%d ops ran; the rates reported account for about %.0f", ops.Load(), sum)
	}
}

func TestAnswerRejectsABadCommand(t *testing.T) {
	t.Parallel()
	in := instance{op: func(context.Context, int64) error { return nil }}
	for _, cmd := range []string{"measure soon\n", "stop\n"} {
		var out strings.Builder
		if err := answer(context.Background(), in, strings.NewReader(cmd), &out); err == nil {
			t.Errorf("answer(%q) = nil; want an error", cmd)
		}
	}
}

func TestKeepKeepsTheBestRoundPerWriterCount(t *testing.T) {
	t.Parallel()
	best := results{rate: map[string]figures{}, cpu: map[string]figures{}}
	best.keep("s", round{Rate: figures{1: 100, 16: 500}, CPU: figures{1: 10, 16: 5}})
	best.keep("s", round{Rate: figures{1: 120, 16: 400}, CPU: figures{1: 9, 16: 6}})
	if best.rate["s"][1] != 120 || best.cpu["s"][1] != 9 || best.rate["s"][16] != 500 || best.cpu["s"][16] != 5 {
		t.Fatalf("best = %v / %v; want 1w from round 2, 16w from round 1, each with its round's CPU", best.rate, best.cpu)
	}
}
