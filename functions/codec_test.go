package functions

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

func TestBuildRequest(t *testing.T) {
	t.Parallel()
	row := store.Row{Seq: 7, TS: time.Date(2026, 8, 4, 10, 0, 0, 183742000, time.UTC), Actor: "owner", Op: "delete", EntityID: "t1", Type: "task"}
	before := &store.Record{Type: "task", ID: "t1", Version: 3, Kind: store.KindLive,
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}
	got, err := BuildRequest("d-1", row, nil, before)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"delivery":"d-1","row":{"seq":7,"ts":"2026-08-04T10:00:00.183742Z","actor":"owner","op":"delete","entityId":"t1","type":"task","payload":{}},` +
		`"entity":null,"before":{"type":"task","id":"t1","version":3,"properties":{},"links":[],"createdAt":"2026-01-01T00:00:00.000000Z","updatedAt":"2026-01-02T00:00:00.000000Z"}}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if before.Links != nil || before.Properties != nil {
		t.Fatal("BuildRequest changed its input")
	}
	var req Request
	if err := json.Unmarshal(got, &req); err != nil || req.Delivery != "d-1" || req.Entity != nil || req.Before.Version != 3 {
		t.Fatalf("decoded %+v, %v", req, err)
	}
}

func TestBuildRequestBadJSON(t *testing.T) {
	t.Parallel()
	if _, err := BuildRequest("d", store.Row{Payload: json.RawMessage(`{`)}, nil, nil); err == nil {
		t.Fatal("encoded an invalid payload")
	}
}

func TestDecodeResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		want       string // JSON of the mutations
	}{
		{"empty", ``, `null`},
		{"whitespace", " \n ", `null`},
		{"text", `OK`, `null`},
		{"json array", `[1]`, `null`},
		{"no actions", `{"received": true}`, `null`},
		{"null actions", `{"actions": null}`, `null`},
		{"empty actions", `{"actions": []}`, `[]`},
		{"one of each", `{"ok": 1, "actions": [
			{"op": "put", "type": "task", "entityId": "t1", "properties": {"a": 1}},
			{"op": "patch", "type": "task", "entityId": "t1", "patch": {"a": null}, "ifVersion": 3},
			{"op": "delete", "type": "task", "entityId": "t2"},
			{"op": "link", "type": "task", "entityId": "t1", "rel": "owner", "target": {"type": "user", "id": "u"}},
			{"op": "unlink", "type": "task", "entityId": "t1", "rel": "owner", "target": {"type": "user", "id": "u"}}]}`,
			`[{"op":"put","type":"task","entityId":"t1","properties":{"a":1}},` +
				`{"op":"patch","type":"task","entityId":"t1","patch":{"a":null},"ifVersion":3},` +
				`{"op":"delete","type":"task","entityId":"t2"},` +
				`{"op":"link","type":"task","entityId":"t1","rel":"owner","target":{"type":"user","id":"u"}},` +
				`{"op":"unlink","type":"task","entityId":"t1","rel":"owner","target":{"type":"user","id":"u"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ms, err := DecodeResponse([]byte(tt.body))
			if err != nil {
				t.Fatalf("DecodeResponse: %v", err)
			}
			got, _ := json.Marshal(ms)
			if string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestDecodeResponseErrors(t *testing.T) {
	t.Parallel()
	many := `{"actions": [` + strings.Repeat(`{"op":"delete","type":"a","entityId":"b"},`, MaxActions) + `{"op":"delete","type":"a","entityId":"b"}]}`
	tests := []struct {
		name, body string
		field      string // details.field of the wrapped *problem.Error, if any
		also       error
	}{
		{"not json", `{actions}`, "", nil},
		{"actions not a list", `{"actions": {"op": "put"}}`, "", nil},
		{"action not an object", `{"actions": [1]}`, "", nil},
		{"null action", `{"actions": [null]}`, "", nil},
		{"unknown field", `{"actions": [{"op": "delete", "type": "a", "entityId": "b", "color": 1}]}`, "color", nil},
		{"wrong field type", `{"actions": [{"op": "delete", "type": "a", "entityId": 1}]}`, "entityId", nil},
		{"no op", `{"actions": [{"type": "a", "entityId": "b"}]}`, "op", nil},
		{"unknown op", `{"actions": [{"op": "upsert", "type": "a", "entityId": "b"}]}`, "op", nil},
		{"merge", `{"actions": [{"op": "merge", "type": "a", "entityId": "b", "from": {"type": "a", "id": "c"}}]}`, "op", nil},
		{"split", `{"actions": [{"op": "split", "type": "a", "entityId": "b", "into": {"id": "c"}, "properties": ["x"]}]}`, "op", nil},
		{"engine op", `{"actions": [{"op": "park", "type": "a", "entityId": "b"}]}`, "op", nil},
		{"bad type", `{"actions": [{"op": "delete", "type": "A", "entityId": "b"}]}`, "type", nil},
		{"put without properties", `{"actions": [{"op": "put", "type": "a", "entityId": "b"}]}`, "properties", nil},
		{"field of another op", `{"actions": [{"op": "delete", "type": "a", "entityId": "b", "patch": {}}]}`, "patch", nil},
		{"link without target", `{"actions": [{"op": "link", "type": "a", "entityId": "b", "rel": "r"}]}`, "target", nil},
		{"too many", many, "", ErrTooManyActions},
		{"too large", `{"pad": "` + strings.Repeat("x", MaxResponseBytes) + `"}`, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ms, err := DecodeResponse([]byte(tt.body))
			if !errors.Is(err, ErrInvalidResponse) {
				t.Fatalf("got %v, %v; want ErrInvalidResponse", ms, err)
			}
			if tt.also != nil && !errors.Is(err, tt.also) {
				t.Fatalf("error %v is not %v", err, tt.also)
			}
			if tt.field != "" {
				var pe *problem.Error
				if !errors.As(err, &pe) || pe.Details["field"] != tt.field {
					t.Fatalf("error %v does not name field %q", err, tt.field)
				}
			}
		})
	}
}
