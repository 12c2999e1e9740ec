package rowcodec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

func TestEncodeChanges(t *testing.T) {
	t.Parallel()
	after := &store.Record{
		Type: "t", ID: "i", Version: 2, Kind: store.KindLive,
		Properties:    json.RawMessage(`{"a":"<"}`),
		CreatedAt:     time.Date(2026, 1, 1, 2, 0, 0, 999, cest),
		UpdatedAt:     time.Date(2026, 1, 1, 2, 0, 0, 1999, cest),
		GroupVersions: map[string]int64{"a": 2},
	}
	const snap = `{"type":"t","id":"i","version":2,"properties":{"a":"<"},"links":[],` +
		`"createdAt":"2026-01-01T00:00:00.000000Z","updatedAt":"2026-01-01T00:00:00.000001Z"}`
	tests := []struct {
		name    string
		in      []store.Change
		want    string
		wantErr string
	}{
		{"nil", nil, `[]`, ""},
		{"sorted by ordinal", []store.Change{
			{Ordinal: 1, Kind: store.ChangeUpdated, Type: "t", ID: "i", Version: 2, After: after, ConflictGroups: []string{"a"}},
			{Ordinal: 0, Kind: store.ChangeDeleted, Type: "u", ID: "j", Version: 2},
		}, `[{"ordinal":0,"kind":"deleted","type":"u","id":"j","version":2,"before":null,"after":null,"conflictGroups":[]},` +
			`{"ordinal":1,"kind":"updated","type":"t","id":"i","version":2,"before":null,"after":` + snap + `,"conflictGroups":["a"]}]`, ""},
		{"duplicate ordinal", []store.Change{{Ordinal: 3}, {Ordinal: 3}}, "", "duplicate change ordinal 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeChanges(tc.in)
			check(t, "EncodeChanges", got, err, tc.want, tc.wantErr)
		})
	}
	if after.Kind != store.KindLive || after.GroupVersions == nil {
		t.Fatal("EncodeChanges changed a snapshot it was given")
	}
}

func TestDecodeChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []store.Change
		wantErr string
	}{
		{"null", `null`, []store.Change{}, ""},
		{"normalized", `[{"ordinal":0,"kind":"created","type":"t","id":"i","version":1,"before":null,` +
			`"after":{"type":"t","id":"i","version":1,"properties":{},"links":null,"createdAt":"2026-01-01T02:00:00.0000019+02:00","updatedAt":"2026-01-01T00:00:00.000000Z"},"conflictGroups":null}]`,
			[]store.Change{{
				Kind: store.ChangeCreated, Type: "t", ID: "i", Version: 1,
				After: &store.Record{
					Type: "t", ID: "i", Version: 1, Properties: json.RawMessage(`{}`), Links: []store.Link{},
					CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 1000, time.UTC),
					UpdatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
				},
				ConflictGroups: []string{},
			}}, ""},
		{"bad", `{`, nil, "decode changes: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeChanges(tc.in)
			check(t, "DecodeChanges", got, err, tc.want, tc.wantErr)
		})
	}
}

func TestChangeOf(t *testing.T) {
	t.Parallel()
	text, err := EncodeChanges([]store.Change{
		{Ordinal: 0, Kind: store.ChangeUpdated, Type: "a", ID: "1"},
		{Ordinal: 1, Kind: store.ChangeDeleted, Type: "b", ID: "2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key      store.EntityKey
		wantKind string
		wantOK   bool
	}{
		{store.EntityKey{Type: "a", ID: "1"}, store.ChangeUpdated, true},
		{store.EntityKey{Type: "b", ID: "2"}, store.ChangeDeleted, true},
		{store.EntityKey{Type: "a", ID: "2"}, "", false},
	}
	for _, tc := range tests {
		ch, ok, err := ChangeOf(text, tc.key)
		if err != nil || ok != tc.wantOK || ch.Kind != tc.wantKind {
			t.Errorf("ChangeOf(%v) = %q, %t, %v; want %q, %t", tc.key, ch.Kind, ok, err, tc.wantKind, tc.wantOK)
		}
	}
	if _, _, err := ChangeOf("{", store.EntityKey{}); err == nil {
		t.Fatal("ChangeOf of bad JSON succeeded")
	}
}

func TestSecondEntity(t *testing.T) {
	t.Parallel()
	change := func(typ, id string) store.Change { return store.Change{Type: typ, ID: id} }
	tests := []struct {
		name    string
		changes []store.Change
		want    *store.EntityKey
		wantErr string
	}{
		{"none", nil, nil, ""},
		{"primary only", []store.Change{change("t", "p"), change("t", "p")}, nil, ""},
		{"second", []store.Change{change("t", "p"), change("t", "s"), change("t", "s")}, &store.EntityKey{Type: "t", ID: "s"}, ""},
		{"second first", []store.Change{change("u", "s"), change("t", "p")}, &store.EntityKey{Type: "u", ID: "s"}, ""},
		{"third", []store.Change{change("t", "s"), change("t", "x")}, nil, "changes touch t/x, a third entity"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &store.Commit{Row: store.Row{Type: "t", EntityID: "p"}, Changes: tc.changes}
			got, err := SecondEntity(c)
			check(t, "SecondEntity", got, err, tc.want, tc.wantErr)
		})
	}
}

func TestReceipt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   store.Receipt
		text string
		back store.Receipt
	}{
		{"nil lists", store.Receipt{Status: store.ReceiptNoop},
			`{"status":"noop","accepted":[],"rejected":[]}`,
			store.Receipt{Status: store.ReceiptNoop, Accepted: []string{}, Rejected: []store.RejectedProperty{}}},
		{"full", store.Receipt{
			MutationID: "m", Status: store.ReceiptRejected, Seq: 4, Version: 3,
			Accepted: []string{"a"}, Rejected: []store.RejectedProperty{{Property: "b", Reason: "<conflict>"}},
			Reason: &store.Reason{Code: "conflict", Message: "x"}, Proposed: json.RawMessage(`{"b":1}`),
		}, `{"mutationId":"m","status":"rejected","seq":4,"version":3,"accepted":["a"],` +
			`"rejected":[{"property":"b","reason":"<conflict>"}],"reason":{"code":"conflict","message":"x"},"proposed":{"b":1}}`,
			store.Receipt{
				MutationID: "m", Status: store.ReceiptRejected, Seq: 4, Version: 3,
				Accepted: []string{"a"}, Rejected: []store.RejectedProperty{{Property: "b", Reason: "<conflict>"}},
				Reason: &store.Reason{Code: "conflict", Message: "x"}, Proposed: json.RawMessage(`{"b":1}`),
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text, err := EncodeReceipt(tc.in)
			if err != nil || text != tc.text {
				t.Fatalf("EncodeReceipt = %s, %v; want %s", text, err, tc.text)
			}
			back, err := DecodeReceipt(text)
			if err != nil || !reflect.DeepEqual(back, tc.back) {
				t.Fatalf("DecodeReceipt = %#v, %v; want %#v", back, err, tc.back)
			}
		})
	}
	if _, err := DecodeReceipt("["); err == nil || !strings.HasPrefix(err.Error(), "decode receipt: ") {
		t.Fatalf("DecodeReceipt([) error = %v", err)
	}
}
