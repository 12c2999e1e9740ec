package triggers

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

func testInput() Subject {
	return Subject{
		Row: &store.Row{Seq: 42, TS: time.Date(2026, 8, 4, 10, 0, 0, 0, time.UTC), Actor: "owner", Op: "patch",
			EntityID: "t1", Type: "task", Payload: json.RawMessage(`{"properties":["status"]}`)},
		Entity: &store.Record{Type: "task", ID: "t1", Version: 42,
			Properties: json.RawMessage(`{"status":"done","n":3,"tags":["a","b"],"owner":{"name":"ann"}}`),
			Links:      []store.Link{{Rel: "assignee", Target: store.EntityKey{Type: "user", ID: "u1"}}}},
		Before: &store.Record{Type: "task", ID: "t1", Version: 7, Properties: json.RawMessage(`{"status":"open","n":2}`)},
	}
}

func TestEval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want Stance
	}{
		{`entity != null && entity.properties.status == 'done'`, StanceMatched},
		{`entity.properties.status == "open"`, StanceNotMatched},
		{`before.properties.status == "open" && entity.properties.status == "done"`, StanceMatched},
		{`entity.properties.n == 3 && entity.properties.n == 3.0 && entity.properties.n == 3u`, StanceMatched},
		{`entity.version == row.seq && entity.id == row.entityId && entity.type == "task"`, StanceMatched},
		{`entity.links[0].target.id == "u1" && entity.links[0].rel == "assignee"`, StanceMatched},
		{`"a" in entity.properties.tags && entity.properties.owner.name.startsWith("a")`, StanceMatched},
		{`"status" in row.payload.properties && row.op == "patch"`, StanceMatched},
		{`entity.properties.missing == "x"`, StanceNotMatched},     // missing key
		{`entity.properties.owner.age > 3`, StanceNotMatched},      // missing nested key
		{`has(entity.properties.missing)`, StanceNotMatched},       // presence test
		{`entity.properties.tags.x == 1`, StanceError},             // field of a list
		{`int(entity.properties.status) == 1`, StanceError},        // bad conversion
		{`entity.properties.status > 1`, StanceError},              // no such overload
		{`entity.properties.status`, StanceError},                  // not a bool
		{`1.0 / (entity.properties.n - 3.0) > 0.0`, StanceMatched}, // +Inf, not an error for doubles
		{`entity.properties.missing == "x" || true`, StanceMatched},
		{`entity.properties.missing == "x" && false`, StanceNotMatched},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			t.Parallel()
			p, err := Compile("when", tc.src)
			if err != nil {
				t.Fatal(err)
			}
			o, err := p.Eval(testInput())
			if err != nil {
				t.Fatal(err)
			}
			if o.Stance != tc.want {
				t.Errorf("stance = %v (%v), want %v", o.Stance, o.Err, tc.want)
			}
			if (o.Stance == StanceError) != (o.Err != nil) {
				t.Errorf("stance %v with err %v", o.Stance, o.Err)
			}
		})
	}
}

func TestEvalNullEntity(t *testing.T) {
	t.Parallel()
	in := testInput()
	in.Entity, in.Row.Op = nil, "delete"
	tests := []struct {
		src  string
		want Stance
	}{
		{`entity == null && before.properties.status == "open"`, StanceMatched},
		{`entity != null && entity.properties.status == "done"`, StanceNotMatched},
		{`entity.properties.status == "done"`, StanceNotMatched}, // a field of null is a missing key
		{`size(entity) > 0`, StanceError},
	}
	for _, tc := range tests {
		p, err := Compile("when", tc.src)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := p.Eval(in); o.Stance != tc.want {
			t.Errorf("%s: stance = %v (%v), want %v", tc.src, o.Stance, o.Err, tc.want)
		}
	}
}

func TestEvalCostLimit(t *testing.T) {
	t.Parallel()
	p, err := compile("when", `entity.properties.tags.all(x, entity.properties.tags.all(y, x + y != ""))`, 5)
	if err != nil {
		t.Fatal(err)
	}
	if p.bounded {
		t.Fatal("a comprehension over a dyn list was judged bounded")
	}
	o, _ := p.Eval(testInput())
	if o.Stance != StanceError || o.Err == nil {
		t.Errorf("outcome = %+v, want a cost limit error", o)
	}
}

func TestEvalBadInput(t *testing.T) {
	t.Parallel()
	p, err := Compile("when", `true`)
	if err != nil {
		t.Fatal(err)
	}
	in := testInput()
	in.Entity.Properties = json.RawMessage(`{`)
	if o, err := p.Eval(in); err != nil || o.Stance != StanceMatched {
		t.Errorf("a program that does not read entity: %+v, %v", o, err)
	}
	p, err = Compile("when", `entity.id == "t1"`)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := p.Eval(in); err != nil || o.Stance != StanceError || !errors.Is(o.Err, ErrBadInput) {
		t.Errorf("a program that reads entity: %+v, %v; want an error stance wrapping ErrBadInput", o, err)
	}
	if _, err := p.Eval(Subject{}); !errors.Is(err, ErrBadInput) {
		t.Errorf("no row: err = %v, want ErrBadInput", err)
	}
}

func TestGuards(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src    string
		guards []string // path src, in conjunct order
		hashed string
	}{
		{`entity.properties.project == "p1" && entity.properties.status == "done"`,
			[]string{"entity.properties.project", "entity.properties.status"}, "entity.properties.project"},
		{`row.type == "task" && "x" == entity.properties["a-b"]`,
			[]string{"row.type", `entity.properties["a-b"]`}, `entity.properties["a-b"]`},
		{`entity != null && entity.properties.status == 'done'`,
			[]string{"entity", "entity.properties.status"}, "entity.properties.status"},
		{`entity.properties.a == 1 || entity.properties.b == 2`, nil, ""},
		{`!(entity.properties.a == 1)`, nil, ""},
		{`entity.properties.a != 1 && entity.properties.b in ["x"]`, nil, ""},
		{`has(entity.properties.a) && entity.properties.a == null`, nil, ""},
		{`entity.properties.tags[0] == "a"`, nil, ""},
		// Unbounded cost: only the leftmost conjunct may be a guard.
		{`entity.properties.a == "x" && entity.properties.s.contains("y") && entity.properties.b == "z"`,
			[]string{"entity.properties.a"}, "entity.properties.a"},
		{`entity.properties.s.contains("y") && entity.properties.b == "z"`, nil, ""},
	}
	for _, tc := range tests {
		p, err := Compile("when", tc.src)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, g := range p.guards {
			got = append(got, g.path)
		}
		if mustJSON(t, got) != mustJSON(t, tc.guards) {
			t.Errorf("%s: guards %q, want %q", tc.src, got, tc.guards)
		}
		e := &entry{prg: p}
		for _, g := range p.guards {
			e.guards = append(e.guards, entryGuard{guard: g})
		}
		h, ok := e.hashGuard()
		if ok != (tc.hashed != "") || ok && h.path != tc.hashed {
			t.Errorf("%s: hashed under %q (%v), want %q", tc.src, h.path, ok, tc.hashed)
		}
	}
}
