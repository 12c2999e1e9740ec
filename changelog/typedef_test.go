package changelog

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/eddy-run/eddy/problem"
)

const taskDef = `{
  "properties": {"title": {"kind": "string", "required": true}, "dueAt": {"kind": "timestamp"},
                 "startAt": {"kind": "timestamp"}, "points": {"kind": "integer"}, "status": {"kind": "string"}},
  "states": {"status": {"initial": "open", "transitions": {"open": ["doing", "done"], "doing": ["done", "open"], "done": []}}},
  "conflictGroups": {"schedule": ["dueAt", "startAt"]}
}`

func TestParseTypeDef(t *testing.T) {
	t.Parallel()
	d, err := ParseTypeDef([]byte(taskDef))
	if err != nil {
		t.Fatalf("ParseTypeDef: %v", err)
	}
	for prop, want := range map[string]string{"dueAt": "schedule", "startAt": "schedule", "title": "title", "other": "other"} {
		if got := d.GroupOf(prop); got != want {
			t.Errorf("GroupOf(%q) = %q, want %q", prop, got, want)
		}
	}
	if d.States["status"].Initial != "open" || !d.Properties["title"].Required {
		t.Errorf("decoded definition = %+v", d)
	}
	var nilDef *TypeDef
	if got := nilDef.GroupOf("x"); got != "x" {
		t.Errorf("nil GroupOf = %q", got)
	}
}

func TestParseTypeDefAccess(t *testing.T) {
	t.Parallel()
	d, err := ParseTypeDef([]byte(`{"access": {"read": "user in entity.properties.members"}}`))
	if err != nil {
		t.Fatalf("ParseTypeDef: %v", err)
	}
	if d.ReadRule() == nil || d.ReadRule().String() != "user in entity.properties.members" {
		t.Errorf("ReadRule = %v", d.ReadRule())
	}
	if d, err := ParseTypeDef([]byte(`{"strict": false}`)); err != nil || d.ReadRule() != nil {
		t.Errorf("a definition without access has rule %v (%v)", d.ReadRule(), err)
	}
}

func TestParseTypeDefValid(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{}`,
		`{"strict": true}`,
		`{"properties": {"a": {"kind": "any"}, "b": {}}}`,
		`{"states": {"s": {"transitions": {"x": []}}}}`,
		`{"conflictGroups": {"g": ["a", "b"]}, "properties": {"a": {"kind": "number"}}}`,
		`{"conflictGroups": {"a": ["a", "b"]}, "properties": {"a": {"kind": "number"}}}`,
		`{"properties": {"status": {"kind": "any"}}, "states": {"status": {"initial": "x", "transitions": {"x": ["x"]}}}}`,
	} {
		if _, err := ParseTypeDef([]byte(raw)); err != nil {
			t.Errorf("ParseTypeDef(%s): %v", raw, err)
		}
	}
}

func TestParseTypeDefInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw, field string
	}{
		{"unknown top field", `{"strict": true, "extra": 1}`, "extra"},
		{"unknown property field", `{"properties": {"a": {"kind": "string", "min": 1}}}`, "min"},
		{"unknown state field", `{"states": {"s": {"transitions": {"a": []}, "final": "a"}}}`, "final"},
		{"unknown kind", `{"properties": {"a": {"kind": "date"}}}`, "properties.a.kind"},
		{"empty property name", `{"properties": {"": {"kind": "string"}}}`, "properties"},
		{"strict not bool", `{"strict": "yes"}`, "strict"},
		{"no transitions", `{"states": {"s": {"initial": "a"}}}`, "states.s.transitions"},
		{"unknown target", `{"states": {"s": {"transitions": {"a": ["b"]}}}}`, "states.s.transitions.a"},
		{"unknown initial", `{"states": {"s": {"initial": "z", "transitions": {"a": []}}}}`, "states.s.initial"},
		{"empty state value", `{"states": {"s": {"transitions": {"": []}}}}`, "states.s.transitions"},
		{"state kind", `{"properties": {"s": {"kind": "integer"}}, "states": {"s": {"transitions": {"a": []}}}}`, "properties.s.kind"},
		{"property in two groups", `{"conflictGroups": {"g1": ["a"], "g2": ["b", "a"]}}`, "conflictGroups.g2"},
		{"empty group", `{"conflictGroups": {"g": []}}`, "conflictGroups.g"},
		{"empty group member", `{"conflictGroups": {"g": [""]}}`, "conflictGroups.g"},
		{"group collides", `{"properties": {"title": {"kind": "string"}}, "conflictGroups": {"title": ["a", "b"]}}`, "conflictGroups.title"},
		{"group collides with state", `{"states": {"s": {"transitions": {"a": []}}}, "conflictGroups": {"s": ["a"]}}`, "conflictGroups.s"},
		{"access rule does not compile", `{"access": {"read": "user in"}}`, "access.read"},
		{"access rule not bool", `{"access": {"read": "user"}}`, "access.read"},
		{"access rule empty", `{"access": {}}`, "access.read"},
		{"access unknown field", `{"access": {"write": "true"}}`, "write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseTypeDef([]byte(tt.raw))
			pe := asProblem(t, err, problem.BadRequest)
			if got, _ := pe.Details["field"].(string); got != tt.field {
				t.Errorf("field = %q, want %q (%v)", got, tt.field, pe)
			}
		})
	}
}

func TestParseTypeDefNotObject(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{``, `null`, `[]`, `"x"`, `{} {}`, `{`} {
		_, err := ParseTypeDef([]byte(raw))
		asProblem(t, err, problem.BadRequest)
	}
}

func TestTypeDefIsIntegral(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"0": true, "-0": true, "1": true, "-12": true, "1.0": true, "1.000": true, "1e3": true,
		"1E+3": true, "120e-1": true, "100e-2": true, "0.0e-5": true, "1e99999999999999999999": true,
		"1.5": false, "1e-3": false, "0.1": false, "15e-1": false, "1e-99999999999999999999": false, "1.25e1": false,
		"1.25e2": true, "12345678901234567890123": true,
	}
	for n, want := range tests {
		if got := isIntegral(n); got != want {
			t.Errorf("isIntegral(%s) = %v, want %v", n, got, want)
		}
	}
}

func TestTypeDefCheckKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		kind, value string
		want        bool
	}{
		{KindString, `"x"`, true}, {KindString, `1`, false},
		{KindNumber, `1.5`, true}, {KindNumber, `"1"`, false},
		{KindInteger, `2`, true}, {KindInteger, `2.5`, false}, {KindInteger, `"2"`, false},
		{KindBoolean, `false`, true}, {KindBoolean, `null`, false},
		{KindObject, `{}`, true}, {KindObject, `[]`, false},
		{KindArray, `[]`, true}, {KindArray, `{}`, false},
		{KindTimestamp, `"2026-08-04T10:00:00Z"`, true}, {KindTimestamp, `"2026-08-04T10:00:00.183742+02:00"`, true},
		{KindTimestamp, `"2026-12-01"`, false}, {KindTimestamp, `1`, false},
		{KindAny, `null`, true}, {"bogus", `1`, false},
	}
	for _, tt := range tests {
		v, err := decodeJSON([]byte(tt.value))
		if err != nil {
			t.Fatal(err)
		}
		if got := checkKind(tt.kind, v); got != tt.want {
			t.Errorf("checkKind(%s, %s) = %v, want %v", tt.kind, tt.value, got, tt.want)
		}
	}
}

// asProblem asserts err is a *problem.Error with code.
func asProblem(t *testing.T, err error, code string) *problem.Error {
	t.Helper()
	var pe *problem.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v (%T), want *problem.Error %s", err, err, code)
	}
	if pe.Code != code {
		t.Fatalf("code = %s, want %s (%v)", pe.Code, code, pe)
	}
	if _, err := json.Marshal(pe); err != nil {
		t.Fatalf("problem does not marshal: %v", err)
	}
	return pe
}
