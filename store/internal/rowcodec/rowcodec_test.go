package rowcodec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// cest is a non-UTC zone, so tests see times stored in UTC.
var cest = time.FixedZone("CEST", 2*3600)

func TestMarshal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"html kept", map[string]string{"a": "<b>&</b>"}, `{"a":"<b>&</b>"}`},
		{"raw bytes kept", struct {
			P json.RawMessage `json:"p"`
		}{json.RawMessage(`{"z":1,"a":"<"}`)}, `{"p":{"z":1,"a":"<"}}`},
		{"nil slice", []string(nil), `null`},
		{"nil map", map[string]int64(nil), `null`},
		{"no newline", 1, `1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Marshal(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("Marshal = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := Marshal(func() {}); err == nil {
		t.Fatal("Marshal of a func succeeded")
	}
}

func TestRawText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  json.RawMessage
		def  string
		want string
	}{
		{nil, "{}", "{}"},
		{json.RawMessage{}, "[]", "[]"},
		{json.RawMessage(`{"b":1, "a":2}`), "{}", `{"b":1, "a":2}`},
		{json.RawMessage(`null`), "{}", `null`},
	}
	for _, tc := range tests {
		if got := RawText(tc.raw, tc.def); got != tc.want {
			t.Errorf("RawText(%q, %q) = %q, want %q", tc.raw, tc.def, got, tc.want)
		}
	}
}

func TestStrings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []string
		text string
		out  []string
	}{
		{nil, `[]`, []string{}},
		{[]string{}, `[]`, []string{}},
		{[]string{"a", "<b>"}, `["a","<b>"]`, []string{"a", "<b>"}},
	}
	for _, tc := range tests {
		text, err := EncodeStrings(tc.in)
		if err != nil || text != tc.text {
			t.Fatalf("EncodeStrings(%q) = %q, %v; want %q", tc.in, text, err, tc.text)
		}
		out, err := DecodeStrings(text)
		if err != nil || !reflect.DeepEqual(out, tc.out) {
			t.Fatalf("DecodeStrings(%q) = %#v, %v; want %#v", text, out, err, tc.out)
		}
	}
	if out, err := DecodeStrings(`null`); err != nil || out == nil {
		t.Fatalf("DecodeStrings(null) = %#v, %v; want an empty slice", out, err)
	}
	if _, err := DecodeStrings(`{`); err == nil || !strings.HasPrefix(err.Error(), "decode string list: ") {
		t.Fatalf("DecodeStrings({) error = %v", err)
	}
}

func TestEncodeRecord(t *testing.T) {
	t.Parallel()
	link := store.Link{Rel: "of", Target: store.EntityKey{Type: "a", ID: "1"}}
	tests := []struct {
		name string
		in   store.Record
		want RecordColumns
	}{
		{"empty", store.Record{}, RecordColumns{Properties: "{}", Links: "[]", GroupVersions: "null"}},
		{"full", store.Record{
			Properties:    json.RawMessage(`{"t":"<x>"}`),
			Links:         []store.Link{link},
			GroupVersions: map[string]int64{"b": 2, "a": 1},
		}, RecordColumns{
			Properties:    `{"t":"<x>"}`,
			Links:         `[{"rel":"of","target":{"type":"a","id":"1"}}]`,
			GroupVersions: `{"a":1,"b":2}`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeRecord(&tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("EncodeRecord = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestDecodeRecord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      RecordColumns
		want    store.Record
		wantErr string
	}{
		{"null lists", RecordColumns{Properties: "{}", Links: "null", GroupVersions: "null"},
			store.Record{Properties: json.RawMessage("{}"), Links: []store.Link{}}, ""},
		{"full", RecordColumns{Properties: `{"a":1}`, Links: `[{"rel":"r","target":{"type":"t","id":"i"}}]`, GroupVersions: `{"g":3}`},
			store.Record{
				Properties:    json.RawMessage(`{"a":1}`),
				Links:         []store.Link{{Rel: "r", Target: store.EntityKey{Type: "t", ID: "i"}}},
				GroupVersions: map[string]int64{"g": 3},
			}, ""},
		{"bad links", RecordColumns{Properties: "{}", Links: "{", GroupVersions: "null"}, store.Record{}, "decode links: "},
		{"bad groups", RecordColumns{Properties: "{}", Links: "[]", GroupVersions: "[1]"}, store.Record{}, "decode group versions: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got store.Record
			err := DecodeRecord(&got, tc.in)
			check(t, "DecodeRecord", got, err, tc.want, tc.wantErr)
		})
	}
}

func TestSnapshot(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 2, 5, 4, 5, 123456789, cest)
	full := &store.Record{
		Type: "note", ID: "n1", Version: 7, Kind: store.KindLive,
		Properties: json.RawMessage(`{"t":"<b>"}`),
		CreatedAt:  created, UpdatedAt: created.Add(time.Second),
		GroupVersions: map[string]int64{"t": 7},
	}
	tests := []struct {
		name string
		in   *store.Record
		text *string
		back *store.Record
	}{
		{"nil", nil, nil, nil},
		{"full", full,
			ptr(`{"type":"note","id":"n1","version":7,"properties":{"t":"<b>"},"links":[],` +
				`"createdAt":"2026-01-02T03:04:05.123456Z","updatedAt":"2026-01-02T03:04:06.123456Z"}`),
			&store.Record{
				Type: "note", ID: "n1", Version: 7,
				Properties: json.RawMessage(`{"t":"<b>"}`), Links: []store.Link{},
				CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC),
				UpdatedAt: time.Date(2026, 1, 2, 3, 4, 6, 123456000, time.UTC),
			}},
		{"empty properties", &store.Record{Type: "t", ID: "i"},
			ptr(`{"type":"t","id":"i","version":0,"properties":{},"links":[],` +
				`"createdAt":"0001-01-01T00:00:00.000000Z","updatedAt":"0001-01-01T00:00:00.000000Z"}`),
			&store.Record{Type: "t", ID: "i", Properties: json.RawMessage(`{}`), Links: []store.Link{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text, err := EncodeSnapshot(tc.in)
			if err != nil || !reflect.DeepEqual(text, tc.text) {
				t.Fatalf("EncodeSnapshot = %v, %v; want %v", deref(text), err, deref(tc.text))
			}
			back, err := DecodeSnapshot(text)
			if err != nil || !reflect.DeepEqual(back, tc.back) {
				t.Fatalf("DecodeSnapshot = %#v, %v; want %#v", back, err, tc.back)
			}
		})
	}
	if tc := full; tc.Kind != store.KindLive || tc.GroupVersions == nil {
		t.Fatal("EncodeSnapshot changed its argument")
	}
	if _, err := DecodeSnapshot(ptr("[")); err == nil || !strings.HasPrefix(err.Error(), "decode snapshot: ") {
		t.Fatalf("DecodeSnapshot([) error = %v", err)
	}
}

// check fails t unless, with wantErr set, err's text starts with it, or,
// with wantErr empty, err is nil and got deep-equals want.
func check[T any](t *testing.T, what string, got T, err error, want T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.HasPrefix(err.Error(), wantErr) {
			t.Fatalf("%s error = %v, want one starting %q", what, err, wantErr)
		}
		return
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %#v, %v; want %#v", what, got, err, want)
	}
}

func ptr(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
