package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

func TestCompileExprErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, code string
		line, col  int
		msg        string
	}{
		{"unknown identifier", `foo + 1`, 1, 1, "unknown name foo"},
		{"unknown on line 2", "entity != nil\n  && bar", 2, 6, "unknown name bar"},
		{"syntax", `[1, 2`, 1, 5, "unexpected token EOF"},
		{"builtin arg type", `put("task", 1, {})`, 1, 13, "cannot use int"},
		{"builtin arity", `delete("task")`, 1, 1, "not enough arguments"},
		{"now is not callable", `now()`, 1, 1, "not callable"},
		{"internal names unreachable", `eddy.tick(1)`, 1, 1, "unknown name eddy"},
		{"predicate type still checked", `filter([1], "x")`, 1, 13, "predicate should return boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := CompileExpr(tt.code)
			pe := badRequest(t, err)
			pos, _ := pe.Details["position"].(map[string]int)
			if pe.Details["field"] != "code" || pos["line"] != tt.line || pos["column"] != tt.col {
				t.Fatalf("details = %v, want code at %d:%d (%v)", pe.Details, tt.line, tt.col, err)
			}
			if !strings.Contains(pe.Message, tt.msg) {
				t.Fatalf("message %q lacks %q", pe.Message, tt.msg)
			}
		})
	}
}

func TestCompileExprLimits(t *testing.T) {
	t.Parallel()
	many := "[" + strings.Repeat("1,", int(MaxNodes)) + "1]"
	_, err := CompileExpr(many)
	badRequest(t, err)
	_, err = CompileExpr(strings.Repeat(" ", MaxCodeLen+1))
	badRequest(t, err)
}

// testInput is a delivery of a patch to task t1 whose status became done.
func testInput() Input {
	return Input{
		Row: store.Row{Seq: 42, TS: time.Date(2026, 8, 4, 10, 0, 0, 183742000, time.UTC), Actor: "owner", Op: "patch",
			EntityID: "t1", Type: "task", Payload: json.RawMessage(`{"properties":["status"]}`)},
		Entity: &store.Record{Type: "task", ID: "t1", Version: 42,
			Properties: json.RawMessage(`{"status":"done","points":3,"big":12345678901234567,"ratio":0.5}`),
			Links:      []store.Link{{Rel: "owner", Target: store.EntityKey{Type: "user", ID: "u1"}}}},
		Before:  &store.Record{Type: "task", ID: "t1", Version: 7, Properties: json.RawMessage(`{"status":"open"}`)},
		Trigger: "stamp",
		Now:     time.Date(2026, 8, 4, 10, 0, 1, 0, time.FixedZone("X", 3600)),
	}
}

func TestExprRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, code string
		want       string // JSON of the mutations
	}{
		{"nil", `nil`, `null`},
		{"empty list", `[]`, `null`},
		{"single", `patch("task", entity.id, {"completedAt": now})`,
			`[{"op":"patch","type":"task","entityId":"t1","patch":{"completedAt":"2026-08-04T09:00:01Z"}}]`},
		{"conditional", `entity.properties.status == "done" && before.properties.status != "done" ? delete("task", row.entityId) : nil`,
			`[{"op":"delete","type":"task","entityId":"t1"}]`},
		{"list with nils", `[put("note", "n1", {"by": trigger}), nil, link("task", "t1", "owner", "user", "u2")]`,
			`[{"op":"put","type":"note","entityId":"n1","properties":{"by":"stamp"}},` +
				`{"op":"link","type":"task","entityId":"t1","rel":"owner","target":{"type":"user","id":"u2"}}]`},
		{"nested lists", `[[unlink("task", "t1", "owner", "user", "u1")], [nil, [delete("a", "b")]]]`,
			`[{"op":"unlink","type":"task","entityId":"t1","rel":"owner","target":{"type":"user","id":"u1"}},{"op":"delete","type":"a","entityId":"b"}]`},
		{"map builds list", `map(1..2, put("n", "n" + string(#), {"i": #}))`,
			`[{"op":"put","type":"n","entityId":"n1","properties":{"i":1}},{"op":"put","type":"n","entityId":"n2","properties":{"i":2}}]`},
		{"row fields", `put("r", "x", {"seq": row.seq, "ts": row.ts, "actor": row.actor, "op": row.op, "type": row.type, "changed": row.payload.properties})`,
			`[{"op":"put","type":"r","entityId":"x","properties":{"actor":"owner","changed":["status"],"op":"patch","seq":42,"ts":"2026-08-04T10:00:00.183742Z","type":"task"}}]`},
		{"record fields", `put("r", "x", {"v": entity.version, "p": entity.properties.points + 1, "big": entity.properties.big, "r": entity.properties.ratio * 2, "l": entity.links[0].target.id, "t": entity.type})`,
			`[{"op":"put","type":"r","entityId":"x","properties":{"big":12345678901234567,"l":"u1","p":4,"r":1,"t":"task","v":42}}]`},
		{"patch null removes", `patch("task", "t1", {"note": nil})`, `[{"op":"patch","type":"task","entityId":"t1","patch":{"note":null}}]`},
		{"nested values", `put("r", "x", {"a": [1, "two", {"three": true}], "d": duration("90s")})`,
			`[{"op":"put","type":"r","entityId":"x","properties":{"a":[1,"two",{"three":true}],"d":"1m30s"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := CompileExpr(tt.code)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			ms, err := p.Run(t.Context(), testInput())
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			got, _ := json.Marshal(ms)
			if string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
			for i := range ms {
				if err := changelog.ValidateMutation(&ms[i]); err != nil {
					t.Fatalf("action %d invalid: %v", i, err)
				}
			}
		})
	}
}

func TestExprRunErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, code string
		in         Input
		want       error  // errors.Is target, or nil
		field      string // details.field of a wrapped *problem.Error
		line, col  int    // position of an *EvalError, if any
	}{
		{"string result", `"done"`, testInput(), ErrInvalidResult, "", 0, 0},
		{"number in list", `[put("a", "b", {}), 1]`, testInput(), ErrInvalidResult, "", 0, 0},
		{"map result", `{"op": "put"}`, testInput(), ErrInvalidResult, "", 0, 0},
		{"nil entity", `delete("task", entity.id)`, Input{}, nil, "", 1, 23},
		{"bad type name", `put("Task", "t1", {})`, testInput(), nil, "type", 1, 1},
		{"bad id", `delete("task", "a b")`, testInput(), nil, "entityId", 1, 1},
		{"dynamic id not a string", `delete("task", entity.version)`, testInput(), nil, "", 1, 1},
		{"properties not a map", `put("task", "t1", entity.properties.status)`, testInput(), nil, "", 1, 1},
		{"bad rel", "nil ??\n link(\"task\", \"t1\", \"a b\", \"user\", \"u\")", testInput(), nil, "rel", 2, 2},
		{"bad target", `link("task", "t1", "r", "user", "")`, testInput(), nil, "target.id", 1, 1},
		{"action inside properties", `put("task", "t1", {"x": delete("a", "b")})`, testInput(), nil, "", 1, 1},
		{"non-finite number", `put("task", "t1", {"x": 1.0 / 0})`, testInput(), nil, "", 1, 1},
		{"budget", `map(1..2000, map(1..2000, #))`, testInput(), ErrBudgetExceeded, "", 1, 19},
		{"too many actions", fmt.Sprintf(`map(1..%d, delete("a", "b"))`, MaxActions+1), testInput(), ErrTooManyActions, "", 0, 0},
		{"repeated action counts", fmt.Sprintf(`let d = delete("a", "b"); map(1..%d, d)`, MaxActions+1), testInput(), ErrTooManyActions, "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := CompileExpr(tt.code)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			// A deadline of its own keeps RunTimeout (1s) out of it: on a
			// loaded machine under -race the budget case can take longer
			// than that before it exhausts its memory budget.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			ms, err := p.Run(ctx, tt.in)
			if err == nil {
				t.Fatalf("run returned %v, want an error", ms)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("error %v is not %v", err, tt.want)
			}
			if tt.field != "" {
				var pe *problem.Error
				if !errors.As(err, &pe) || pe.Details["field"] != tt.field {
					t.Fatalf("error %v does not name field %q", err, tt.field)
				}
			}
			var ee *EvalError
			if tt.line != 0 && (!errors.As(err, &ee) || ee.Line != tt.line || ee.Column != tt.col) {
				t.Fatalf("error %#v, want an EvalError at %d:%d", err, tt.line, tt.col)
			}
		})
	}
}

func TestExprRunDeadline(t *testing.T) {
	t.Parallel()
	// Quadratic string building that expr's memory budget does not see.
	p, err := CompileExpr(`let s = repeat("x", 100000); reduce(1..900, #acc + s, "")`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = p.Run(ctx, testInput())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stopped after %v", d)
	}
	var ee *EvalError
	if !errors.As(err, &ee) || ee.Line != 1 {
		t.Fatalf("got %#v, want an EvalError", err)
	}
}

func TestExprRunCanceled(t *testing.T) {
	t.Parallel()
	p, err := CompileExpr(`nil`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := p.Run(ctx, testInput()); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestExprRunDefaultNow(t *testing.T) {
	t.Parallel()
	p, err := CompileExpr(`put("a", "b", {"now": now})`)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := p.Run(t.Context(), Input{})
	if err != nil {
		t.Fatal(err)
	}
	var props struct{ Now time.Time }
	if err := json.Unmarshal(ms[0].Properties, &props); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(props.Now); d < 0 || d > time.Minute || props.Now.Location() != time.UTC {
		t.Fatalf("now = %v, want the current UTC time", props.Now)
	}
}

func TestExprRunBadStoredJSON(t *testing.T) {
	t.Parallel()
	p, err := CompileExpr(`nil`)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []Input{
		{Row: store.Row{Payload: json.RawMessage(`{`)}},
		{Entity: &store.Record{Properties: json.RawMessage(`[`)}},
		{Before: &store.Record{Properties: json.RawMessage(`x`)}},
	} {
		if _, err := p.Run(t.Context(), in); err == nil {
			t.Errorf("ran on undecodable input %+v", in)
		}
	}
}

func TestExprProgramConcurrent(t *testing.T) {
	t.Parallel()
	p, err := CompileExpr(`map(1..3, put("n", trigger + string(#), {}))`)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			in := testInput()
			in.Trigger = fmt.Sprintf("t%d-", i)
			ms, err := p.Run(context.Background(), in)
			if err == nil && (len(ms) != 3 || ms[2].EntityID != in.Trigger+"3") {
				err = fmt.Errorf("got %v", ms)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if p.String() != `map(1..3, put("n", trigger + string(#), {}))` {
		t.Errorf("String() = %q", p.String())
	}
}
