package views

import (
	"errors"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/problem"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	ok := `"version":"v1","types":["task"]`
	tests := []struct {
		name, body, field string
		position          bool
	}{
		{"Bad", `{` + ok + `,"filter":{"cel":"true"}}`, "view", false},
		{"v", `{"types":["task"],"filter":{"cel":"true"}}`, "version", false},
		{"v", `{"version":"` + strings.Repeat("x", 65) + `","types":["task"],"filter":{"cel":"true"}}`, "version", false},
		{"v", `{"version":"v1","filter":{"cel":"true"}}`, "types", false},
		{"v", `{"version":"v1","types":["Task"],"filter":{"cel":"true"}}`, "types", false},
		{"v", `{` + ok + `}`, "filter", false},
		{"v", `{` + ok + `,"filter":{"sql":"x = 1"}}`, "filter", false},
		{"v", `{` + ok + `,"filter":{"cel":"true","fieldEquals":{}}}`, "filter", false},
		{"v", `{` + ok + `,"filter":{"cel":"entity.properties.a =="}}`, "filter.cel", true},
		{"v", `{` + ok + `,"filter":{"cel":"row.seq > 1"}}`, "filter.cel", true},
		{"v", `{` + ok + `,"filter":{"cel":"1 + 1"}}`, "filter.cel", false},
		{"v", `{` + ok + `,"filter":{"cel":7}}`, "filter.cel", false},
		{"v", `{` + ok + `,"filter":{"currentState":{"cel":"entity.x +"}}}`, "filter.currentState.cel", true},
		{"v", `{` + ok + `,"filter":{"currentState":{"when":"true"}}}`, "filter.currentState", false},
		{"v", `{` + ok + `,"filter":{"fieldEquals":{"field":"","expected":"a"}}}`, "filter.fieldEquals.field", false},
		{"v", `{` + ok + `,"filter":{"fieldEquals":{"field":"p","expected":{"a":1}}}}`, "filter.fieldEquals.expected", false},
		{"v", `{` + ok + `,"filter":{"fieldEquals":{"field":"p","expected":null}}}`, "filter.fieldEquals.expected", false},
		{"v", `{` + ok + `,"filter":{"fieldEquals":{"field":"p"}}}`, "filter.fieldEquals.expected", false},
		{"v", `{` + ok + `,"filter":{"fieldEquals":{"field":"p","expected":1,"x":2}}}`, "filter.fieldEquals", false},
		{"v", `{` + ok + `,"filter":{"cel":"true"},"fields":[""]}`, "fields", false},
		{"v", `{` + ok + `,"filter":{"cel":"true"},"extra":1}`, "extra", false},
	}
	for _, tc := range tests {
		_, err := Parse(tc.name, []byte(tc.body))
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Code != problem.BadRequest {
			t.Errorf("%s: err %v, want bad_request", tc.body, err)
			continue
		}
		field, _ := pe.Details["field"].(string)
		if param, _ := pe.Details["parameter"].(string); field == "" {
			field = param
		}
		if field != tc.field {
			t.Errorf("%s: names %q (%v), want %q", tc.body, field, pe, tc.field)
		}
		if _, has := pe.Details["position"]; has != tc.position {
			t.Errorf("%s: position present = %v, want %v", tc.body, has, tc.position)
		}
	}
	for _, body := range []string{`not json`, `[]`, `{"version":"v1",`} {
		if _, err := Parse("v", []byte(body)); problem.CodeOf(err) != problem.BadRequest {
			t.Errorf("%s: err %v, want bad_request", body, err)
		}
	}
}

func TestSignature(t *testing.T) {
	t.Parallel()
	def := func(expected, types, version string) *Definition {
		return mustView(t, "v", `{"version":"`+version+`","types":`+types+`,"filter":{"fieldEquals":{"field":"project","expected":`+expected+`}}}`)
	}
	a := def(`"alpha"`, `["task"]`, "v1")
	if b := def(`"alpha"`, `["task","task"]`, "v2"); b.Signature() != a.Signature() {
		t.Error("the declared version or a repeated type changed the signature")
	}
	if b := def(`"beta"`, `["task"]`, "v1"); b.Signature() == a.Signature() {
		t.Error("same name and version with another value has the same signature")
	}
	if b := def(`"alpha"`, `["note","task"]`, "v1"); b.Signature() == a.Signature() {
		t.Error("other types, same signature")
	}
	if b := def(`1`, `["task"]`, "v1"); b.Signature() != def(`1.0`, `["task"]`, "v1").Signature() {
		t.Error("1 and 1.0 are the same expected value")
	}
	c1 := NewContext("s1", a, "sv", "e1")
	if c2 := NewContext("s2", a, "sv", "e1"); c1.Fingerprint == c2.Fingerprint {
		t.Error("the fingerprint does not include the space")
	}
	if c1.Fingerprint != NewContext("s1", a, "sv", "e1").Fingerprint {
		t.Error("the fingerprint is not deterministic")
	}
}
