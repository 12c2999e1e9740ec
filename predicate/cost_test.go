package predicate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// listRow is a row whose payload.l is a list of n numbers.
func listRow(n int) *store.Row {
	l := make([]int, n)
	for i := range l {
		l[i] = i
	}
	b, _ := json.Marshal(map[string]any{"l": l})
	return &store.Row{Seq: 1, Op: "put", Type: "task", EntityID: "t1", Payload: b}
}

func literalList(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprint(i)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// TestStaticCostRefused: an expression whose worst case CEL's estimator
// shows to be pathological is a bad_request at compile time, for rows
// and records alike; ordinary ones are not.
func TestStaticCostRefused(t *testing.T) {
	t.Parallel()
	l := literalList(250)
	bombs := []string{
		l + `.all(x, ` + l + `.all(y, ` + l + `.all(z, x+y+z >= 0)))`,
		`row.payload.l.all(x, row.payload.l.all(y, row.payload.l.all(z, x == y)))`,
	}
	for _, src := range bombs {
		_, err := CompileRow("when", src)
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Code != problem.BadRequest || pe.Details["reason"] != "cost" {
			t.Errorf("CompileRow(%.50q) = %v, want bad_request with reason cost", src, err)
		}
		rsrc := strings.ReplaceAll(src, "row.payload", "entity.properties")
		if _, err := CompileRecord("filter", rsrc); !errors.As(err, &pe) || pe.Details["reason"] != "cost" {
			t.Errorf("CompileRecord(%.50q) = %v, want bad_request with reason cost", rsrc, err)
		}
	}
	for _, src := range []string{
		`row.op == "put"`,
		`row.payload.l.exists(x, x == 3)`,
		`row.payload.l.all(x, row.payload.l.exists(y, x == y))`,
		`row.actor.matches("^own.*")`,
	} {
		if _, err := CompileRow("when", src); err != nil {
			t.Errorf("CompileRow(%q) = %v, want it accepted", src, err)
		}
	}
}

// TestEvalBudget: the budget holds across rows, not per row: a page of
// rows that each stay under the per-row limit is stopped once their sum
// passes the request's budget, and every row after is rejected unjudged.
func TestEvalBudget(t *testing.T) {
	t.Parallel()
	p, err := CompileRow("when", `row.payload.l.all(x, row.payload.l.exists(y, x == y))`)
	if err != nil {
		t.Fatal(err)
	}
	row := listRow(60)
	one := p.Evaluator(context.Background(), Budget{Cost: 1 << 60, Wall: time.Hour})
	if !one.Allow(row) || one.cost == 0 {
		t.Fatalf("Allow = false or no cost tracked (cost %d, err %v)", one.cost, one.Err())
	}
	per := one.cost
	ev := p.Evaluator(context.Background(), Budget{Cost: 10 * per, Wall: time.Hour})
	n := 0
	for range 100 {
		if ev.Allow(row) {
			n++
		}
	}
	if n != 10 {
		t.Errorf("%d rows matched within a budget of 10 rows' cost, want 10", n)
	}
	var pe *problem.Error
	if err := ev.Err(); !errors.Is(err, ErrBudget) || !errors.As(err, &pe) || pe.Code != problem.BadRequest || pe.Details["parameter"] != "when" {
		t.Fatalf("Err = %v, want ErrBudget as a bad_request on when", err)
	}
	if ev.rows != 11 {
		t.Errorf("judged %d rows, want 11 (none after the budget ran out)", ev.rows)
	}
	ev.Reset(context.Background())
	if !ev.Allow(row) || ev.Err() != nil {
		t.Errorf("after Reset: Allow false or Err %v", ev.Err())
	}
	wall := p.Evaluator(context.Background(), Budget{Cost: 1 << 60, Wall: time.Nanosecond})
	if wall.Allow(row) || !errors.Is(wall.Err(), ErrBudget) {
		t.Errorf("wall budget: Err = %v, want ErrBudget", wall.Err())
	}
}

// TestEvalContext: an ended request context interrupts an evaluation in
// flight and rejects every row after.
func TestEvalContext(t *testing.T) {
	t.Parallel()
	p, err := CompileRow("when", `row.payload.l.all(x, row.payload.l.all(y, x*y >= 0))`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ev := p.Evaluator(ctx, Budget{})
	if ev.Allow(listRow(100)) {
		t.Fatal("Allow = true on an ended context")
	}
	if !errors.Is(ev.Err(), context.Canceled) {
		t.Fatalf("Err = %v, want context.Canceled", ev.Err())
	}
	if ev.cost >= CostLimit/10 {
		t.Errorf("cost %d: the interrupted evaluation ran on (the whole would cost more than %d)", ev.cost, CostLimit)
	}
	ev.Reset(ctx)
	if ev.Allow(testRow()) || !errors.Is(ev.Err(), context.Canceled) {
		t.Errorf("after Reset on an ended context: Err = %v", ev.Err())
	}
	ev.Reset(context.Background())
	if !ev.Allow(listRow(3)) || ev.Err() != nil {
		t.Errorf("after Reset on a live context: Err = %v", ev.Err())
	}
}

// TestEvalNotBool: a when whose type is only known at run time (a
// payload value) and that turns out not to be a bool is a bad_request
// naming the row, not a silent "no match"; a missing value stays a
// non-match.
func TestEvalNotBool(t *testing.T) {
	t.Parallel()
	p, err := CompileRow("when", `row.payload.l`)
	if err != nil {
		t.Fatal(err)
	}
	ev := p.Evaluator(context.Background(), Budget{})
	if ev.Allow(listRow(3)) {
		t.Fatal("a list matched")
	}
	var pe *problem.Error
	if err := ev.Err(); !errors.As(err, &pe) || pe.Code != problem.BadRequest || pe.Details["reason"] != "not_bool" || pe.Details["seq"] != int64(1) {
		t.Fatalf("Err = %v, want bad_request with reason not_bool on row 1", err)
	}
	missing, err := CompileRow("when", `row.payload.nope`)
	if err != nil {
		t.Fatal(err)
	}
	ev = missing.Evaluator(context.Background(), Budget{})
	if ev.Allow(listRow(3)) || ev.Err() != nil {
		t.Fatalf("a missing payload value: Err = %v, want a plain non-match", ev.Err())
	}
	flag, err := CompileRow("when", `row.payload.flag`)
	if err != nil {
		t.Fatal(err)
	}
	ev = flag.Evaluator(context.Background(), Budget{})
	if !ev.Allow(&store.Row{Seq: 2, Op: "put", Type: "task", EntityID: "t1", Payload: json.RawMessage(`{"flag": true}`)}) || ev.Err() != nil {
		t.Fatalf("a bool payload value: Err = %v, want a match", ev.Err())
	}
}
