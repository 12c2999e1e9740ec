package changelog

import (
	"bytes"
	"testing"

	"github.com/eddy-run/eddy/problem"
)

func TestPushMutationID(t *testing.T) {
	for _, tc := range []struct {
		id     string
		client string
		ord    int64
		ok     bool
	}{
		{"c-7f3a:41", "c-7f3a", 41, true},
		{"a:b:3", "a:b", 3, true},
		{"c:0", "", 0, false},
		{"c:-1", "", 0, false},
		{":4", "", 0, false},
		{"c4", "", 0, false},
		{"c:x", "", 0, false},
	} {
		c, o, ok := ParsePushMutationID(tc.id)
		if c != tc.client || o != tc.ord || ok != tc.ok {
			t.Errorf("%q = %q %d %v", tc.id, c, o, ok)
		}
		if ok && PushMutationID(c, o) != tc.id {
			t.Errorf("%q does not round-trip", tc.id)
		}
	}
}

func FuzzDecodePush(f *testing.F) {
	f.Add([]byte(`{"clientId": "c-7f3a", "mutations": [
  {"ordinal": 41, "op": "patch", "type": "task", "entityId": "t1", "patch": {"done": true}, "baseVersion": 12},
  {"ordinal": 42, "op": "put", "type": "task", "entityId": "t9", "properties": {"title": "x"}}]}`))
	f.Add([]byte(`{"clientId": "c", "mutations": [{"ordinal": 0, "op": "delete", "type": "task", "entityId": "t"}]}`))
	f.Add([]byte(`{"clientId": "c", "mutations": [{"ordinal": 1, "mutationId": "m", "op": "delete", "type": "task", "entityId": "t"}]}`))
	f.Add([]byte(`{"mutations": []}`))
	f.Add([]byte(`{"clientId": "c d", "mutations": [{"ordinal": 1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, ms, err := DecodePush(bytes.NewReader(data))
		if err != nil {
			if problem.CodeOf(err) != problem.BadRequest {
				t.Fatalf("error is not bad_request: %v", err)
			}
			return
		}
		if !ValidClientID(p.ClientID) || len(ms) == 0 || len(ms) > MaxMutations || len(p.Ordinals) != len(ms) {
			t.Fatalf("accepted %+v with %d mutations", p, len(ms))
		}
		for i := range ms {
			if p.Ordinals[i] < 1 || ms[i].MutationID != "" {
				t.Fatalf("accepted ordinal %d, mutation id %q", p.Ordinals[i], ms[i].MutationID)
			}
			if err := ValidateMutation(&ms[i]); err != nil {
				t.Fatalf("accepted an invalid mutation: %v", err)
			}
		}
	})
}
