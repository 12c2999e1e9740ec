package functions

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
)

// FuzzDecodeResponse checks that any webhook answer either decodes into
// valid actions or fails with ErrInvalidResponse, never panicking.
func FuzzDecodeResponse(f *testing.F) {
	for _, s := range []string{
		``, `OK`, `{}`, `{"actions": null}`, `{"actions": []}`,
		`{"actions": [{"op": "put", "type": "task", "entityId": "t1", "properties": {"a": [1, {"b": null}]}}]}`,
		`{"actions": [{"op": "link", "type": "task", "entityId": "t1", "rel": "r", "target": {"type": "user", "id": "u"}}]}`,
		`{"actions": [{"op": "merge", "type": "a", "entityId": "b", "from": {"type": "a", "id": "c"}}]}`,
		`{"actions": [ null, 1, "x" ]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ms, err := DecodeResponse(body)
		if err != nil {
			if !errors.Is(err, ErrInvalidResponse) {
				t.Fatalf("error %v is not ErrInvalidResponse", err)
			}
			return
		}
		if len(ms) > MaxActions {
			t.Fatalf("%d actions", len(ms))
		}
		for i := range ms {
			if !slices.Contains([]string{"put", "patch", "delete", "link", "unlink"}, ms[i].Op) {
				t.Fatalf("action %d has op %q", i, ms[i].Op)
			}
			if err := changelog.ValidateMutation(&ms[i]); err != nil {
				t.Fatalf("action %d invalid: %v", i, err)
			}
		}
	})
}

// FuzzParseFunction checks that any definition is either refused with a
// bad_request naming a field or round-trips through its canonical JSON.
func FuzzParseFunction(f *testing.F) {
	for _, s := range []string{
		`{"kind": "expr", "writes": ["task"], "code": "patch(\"task\", entity.id, {\"completedAt\": now})"}`,
		`{"kind": "webhook", "writes": ["task"], "url": "http://127.0.0.1:9000/hook", "secret": "` + testSecret + `", "timeout": "10s"}`,
		`{"kind": "go", "handler": "sync-to-crm"}`,
		`{"kind": "expr", "code": "map(1..3, put(\"n\", string(#), {}))"}`,
		`{"kind": "expr", "code": "foo("}`,
		`{"kind": "webhook", "url": "ftp://x"}`,
	} {
		f.Add("f", []byte(s))
	}
	f.Fuzz(func(t *testing.T, name string, raw []byte) {
		fn, err := ParseFunction(name, raw)
		if err != nil {
			var pe *problem.Error
			if !errors.As(err, &pe) || pe.Code != problem.BadRequest {
				t.Fatalf("error %v is not a bad_request", err)
			}
			return
		}
		canon, err := json.Marshal(fn)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := ParseFunction(name, canon)
		if err != nil {
			t.Fatalf("canonical form %s refused: %v", canon, err)
		}
		if b, _ := json.Marshal(again); string(b) != string(canon) {
			t.Fatalf("round trip changed %s into %s", canon, b)
		}
	})
}
