package triggers

import (
	"encoding/json"
	"testing"
)

// FuzzParseTrigger checks that any body either parses to a trigger whose
// canonical form parses back to itself, or is refused with a bad_request.
func FuzzParseTrigger(f *testing.F) {
	seeds := []string{
		`{"source": {"changes": {"types": ["task"], "ops": ["patch"], "when": "entity != null && entity.properties.status == 'done'"}}, "function": "f"}`,
		`{"source": {"cron": {"schedule": "@every 1m", "timezone": "UTC", "catchUp": "last"}}, "function": "mark-overdue"}`,
		`{"source": {"changes": {}}, "function": "f", "start": "12", "delivery": {"backoff": {"initial": "1s", "max": "5m"}}}`,
		`{"source": {"cron": {"schedule": "TZ=UTC"}}, "function": "f"}`,
		`{"source": {"cron": {"schedule": "*/5 * * * * *"}}, "function": "f", "start": 0}`,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		tr, err := ParseTrigger("t", []byte(body))
		if err != nil {
			badRequest(t, err)
			return
		}
		first := mustJSON(t, tr)
		var again Trigger
		if err := json.Unmarshal([]byte(first), &again); err != nil {
			t.Fatalf("canonical form %s does not parse: %v", first, err)
		}
		if second := mustJSON(t, &again); second != first {
			t.Fatalf("round trip\n got %s\nwant %s", second, first)
		}
	})
}
