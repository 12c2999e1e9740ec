package changelog

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/eddy-run/eddy/problem"
)

// FuzzParseTypeDef checks that any body is either refused with a
// bad_request or parses to a definition whose JSON parses again.
func FuzzParseTypeDef(f *testing.F) {
	for _, s := range []string{
		taskDef,
		`{}`,
		`{"access": {"read": "user in entity.properties.members"}}`,
		`{"properties": {"n": {"kind": "number", "required": true}}}`,
		`{"states": {"status": {"initial": "open", "transitions": {"open": ["done"], "done": []}}}}`,
		`{"properties": {"a": {"kind": "string"}}, "groups": {"g": ["a"]}}`,
		`[]`, `null`, `{"properties": 1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		d, err := ParseTypeDef([]byte(body))
		if err != nil {
			var pe *problem.Error
			if !errors.As(err, &pe) || pe.Code != problem.BadRequest {
				t.Fatalf("err = %v, want bad_request", err)
			}
			return
		}
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("marshal %+v: %v", d, err)
		}
		if _, err := ParseTypeDef(raw); err != nil {
			t.Fatalf("%s parsed, its JSON %s does not: %v", body, raw, err)
		}
	})
}
