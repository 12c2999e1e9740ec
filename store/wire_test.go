package store

import (
	"encoding/json"
	"testing"
	"time"
)

func TestWireTimes(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 8, 4, 12, 0, 0, 900000000, time.FixedZone("CEST", 2*3600))
	row := Row{Seq: 7, TS: ts, Actor: "owner", Op: "put", EntityID: "t1", Type: "task", Payload: json.RawMessage(`{"created":true}`)}
	rec := Record{Type: "task", ID: "t1", Version: 7, Properties: json.RawMessage(`{}`), Links: []Link{}, CreatedAt: ts, UpdatedAt: ts.Add(time.Microsecond)}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"row", row, `{"seq":7,"ts":"2026-08-04T10:00:00.900000Z","actor":"owner","op":"put","entityId":"t1","type":"task","payload":{"created":true}}`},
		{"row pointer", &row, `{"seq":7,"ts":"2026-08-04T10:00:00.900000Z","actor":"owner","op":"put","entityId":"t1","type":"task","payload":{"created":true}}`},
		{"record", rec, `{"type":"task","id":"t1","version":7,"properties":{},"links":[],"createdAt":"2026-08-04T10:00:00.900000Z","updatedAt":"2026-08-04T10:00:00.900001Z"}`},
		{"commit", Commit{Row: row, Changes: []Change{}, Receipt: Receipt{Status: "applied", Accepted: []string{}, Rejected: []RejectedProperty{}}, Provenance: Provenance{Actor: "owner", Via: "api"}},
			`{"seq":7,"ts":"2026-08-04T10:00:00.900000Z","actor":"owner","op":"put","entityId":"t1","type":"task","payload":{"created":true},"changes":[],"receipt":{"status":"applied","accepted":[],"rejected":[]},"provenance":{"actor":"owner","via":"api","depth":0}}`},
	}
	for _, tc := range tests {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	var back Commit
	if err := json.Unmarshal([]byte(tests[3].want), &back); err != nil || back.Seq != 7 || !back.TS.Equal(ts) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}
