package auth

import (
	"testing"

	"github.com/eddy-run/eddy/store"
)

// TestAccessFingerprint: the fingerprint moves with an access rule, the
// allow-list and admin, and with nothing else (not the user, not a role
// below admin).
func TestAccessFingerprint(t *testing.T) {
	policy := func(defs ...string) *Policy {
		var tds []store.TypeDef
		for i := 0; i < len(defs); i += 2 {
			tds = append(tds, store.TypeDef{Type: defs[i], Def: []byte(defs[i+1])})
		}
		p, err := NewPolicy("s", 1, tds)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	u := &Principal{Space: "s", Role: RoleReader, User: "u1"}
	rule := `{"access":{"read":"user in entity.properties.members"}}`
	base := NewReader(u, policy("doc", rule, "note", `{"strict":false}`)).AccessFingerprint()
	same := []string{
		NewReader(u, policy("doc", rule)).AccessFingerprint(),                                                    // a type without a rule
		NewReader(&Principal{Space: "s", Role: RoleReader, User: "u2"}, policy("doc", rule)).AccessFingerprint(), // another user
		NewReader(&Principal{Space: "s", Role: RoleWriter, User: "u1"}, policy("doc", rule)).AccessFingerprint(),
	}
	for i, f := range same {
		if f != base {
			t.Errorf("same %d: %s, want %s", i, f, base)
		}
	}
	other := []string{
		NewReader(u, policy("doc", `{"access":{"read":"user == entity.properties.owner"}}`)).AccessFingerprint(),
		NewReader(u, policy("doc", rule, "note", rule)).AccessFingerprint(),
		NewReader(u, nil).AccessFingerprint(),
		NewReader(&Principal{Space: "s", Role: RoleReader, User: "u1", Types: []string{"doc"}}, policy("doc", rule)).AccessFingerprint(),
		NewReader(&Principal{Space: "s", Role: RoleAdmin}, policy("doc", rule)).AccessFingerprint(),
	}
	for i, f := range other {
		if f == base {
			t.Errorf("other %d: the fingerprint did not move", i)
		}
	}
}
