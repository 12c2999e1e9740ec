package predicate

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

func TestRecordHolds(t *testing.T) {
	t.Parallel()
	rec := &store.Record{Type: "task", ID: "t1", Version: 7,
		Properties: json.RawMessage(`{"project":"alpha","n":1,"open":true,"tags":["a"],"nested":{"k":null}}`),
		Links:      []store.Link{{Rel: "owner", Target: store.EntityKey{Type: "user", ID: "u1"}}}}
	tests := []struct {
		src  string
		want bool
	}{
		{`entity.properties.project == "alpha"`, true},
		{`entity.properties.n == 1`, true},
		{`entity.properties.n == 1u && entity.properties.n == 1.0`, true},
		{`entity.properties.open`, true},
		{`entity.properties.missing == "x"`, false},        // no such key: does not hold
		{`entity.properties.missing == "x" || true`, true}, // an error that || absorbs
		{`int(entity.properties.project) > 0`, false},      // a runtime error
		{`entity.properties.project`, false},               // not a bool
		{`entity.version == 7 && entity.id == "t1" && entity.type == "task"`, true},
		{`entity.links.exists(l, l.rel == "owner" && l.target.id == "u1")`, true},
		{`"a" in entity.properties.tags`, true},
		{`entity.properties.nested.k == null`, true},
	}
	for _, tc := range tests {
		p, err := CompileRecord("filter", tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if got := p.Holds(Bind(rec)); got != tc.want {
			t.Errorf("%s: Holds = %v, want %v", tc.src, got, tc.want)
		}
	}
	bad := &store.Record{Type: "task", Properties: json.RawMessage(`{`)}
	if p, _ := CompileRecord("f", `true || entity.id == "x"`); p.Holds(Bind(bad)) != true {
		t.Error("an expression that does not read the entity holds on any record")
	}
	if p, _ := CompileRecord("f", `entity.id == ""`); p.Holds(Bind(bad)) {
		t.Error("undecodable properties held")
	}
}

func TestCompileRecordErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src      string
		position bool
	}{
		{"entity.properties.a ==", true},
		{"row.seq > 1", true}, // row is not declared in a view filter
		{"1 + 2", false},      // not a bool
		{"   ", false},
	}
	for _, tc := range tests {
		_, err := CompileRecord("filter.cel", tc.src)
		var pe *problem.Error
		if !asProblem(err, &pe) || pe.Code != problem.BadRequest || pe.Details["field"] != "filter.cel" {
			t.Fatalf("%q: err %v, want bad_request naming filter.cel", tc.src, err)
		}
		if _, ok := pe.Details["position"]; ok != tc.position {
			t.Errorf("%q: position present = %v, want %v (%v)", tc.src, ok, tc.position, pe)
		}
	}
}

func asProblem(err error, pe **problem.Error) bool {
	return errors.As(err, pe)
}

func TestRecordEqualities(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want []Equality
	}{
		{`entity.properties.project == "alpha"`, []Equality{{"project", "alpha"}}},
		{`"alpha" == entity.properties["project"] && entity.properties.n == 2 && entity.properties.ok == true`,
			[]Equality{{"project", "alpha"}, {"n", 2.0}, {"ok", true}}},
		{`entity.properties.n == 2u && (entity.properties.a == "x" && entity.properties.b == 1.5)`,
			[]Equality{{"n", 2.0}, {"a", "x"}, {"b", 1.5}}},
		{`entity.properties.project == "alpha" || entity.properties.project == "beta"`, nil},
		{`!(entity.properties.project == "alpha")`, nil},
		{`entity.properties.project != "alpha"`, nil},
		{`entity.properties.obj.k == "x"`, nil},
		{`entity.id == "x" && entity.properties.p == null`, nil},
		{`has(entity.properties.p) && entity.properties.p == entity.properties.q`, nil},
	}
	for _, tc := range tests {
		p, err := CompileRecord("f", tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if got := p.Equalities(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Equalities = %#v, want %#v", tc.src, got, tc.want)
		}
	}
}
