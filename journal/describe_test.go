package journal

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// TestDescribe is the table of the one rule: what a change says to a
// reader that may read alice's docs.
func TestDescribe(t *testing.T) {
	mine := &store.Record{Type: "doc", ID: "d", Version: 4, Properties: json.RawMessage(`{"members":["alice"]}`)}
	theirs := &store.Record{Type: "doc", ID: "d", Version: 5, Properties: json.RawMessage(`{"members":["bob"]}`)}
	broken := &store.Record{Type: "doc", ID: "d", Version: 5, Properties: json.RawMessage(`null`)}
	ch := func(kind string, before, after *store.Record) store.Change {
		return store.Change{Kind: kind, Type: "doc", ID: "d", Version: 5, Before: before, After: after}
	}
	tests := []struct {
		name, op string
		ch       store.Change
		want     string
	}{
		{"created readable", "put", ch(store.ChangeCreated, nil, mine), "object"},
		{"created hidden", "put", ch(store.ChangeCreated, nil, theirs), ""},
		{"updated readable", "patch", ch(store.ChangeUpdated, mine, mine), "object"},
		{"gained sight", "patch", ch(store.ChangeUpdated, theirs, mine), "access,object"},
		{"lost sight", "patch", ch(store.ChangeUpdated, mine, theirs), "access"},
		{"hidden both sides", "patch", ch(store.ChangeUpdated, theirs, theirs), ""},
		{"deleted", "delete", ch(store.ChangeDeleted, mine, nil), "tombstone:deleted"},
		{"merged away", "merge", ch(store.ChangeDeleted, mine, nil), "tombstone:merged"},
		{"deleted hidden", "delete", ch(store.ChangeDeleted, theirs, nil), ""},
		{"deleted by put", "put", ch(store.ChangeDeleted, mine, nil), "!RECORD_UNREADABLE"},
		{"unknown op", "frobnicate", ch(store.ChangeUpdated, mine, mine), "!RECORD_UNREADABLE"},
		{"unknown op hidden", "frobnicate", ch(store.ChangeUpdated, theirs, theirs), ""},
		{"unknown kind", "patch", ch("archived", mine, mine), "!RECORD_UNREADABLE"},
		{"no after", "patch", ch(store.ChangeUpdated, mine, nil), "!OBJECT_UNAVAILABLE"},
		{"broken card", "patch", ch(store.ChangeUpdated, mine, broken), "!OBJECT_UNAVAILABLE"},
		{"no snapshots", "patch", ch(store.ChangeUpdated, nil, nil), ""},
	}
	for _, tt := range tests {
		c := &store.Commit{Row: store.Row{Seq: 5, Op: tt.op}, Changes: []store.Change{tt.ch}}
		var got []string
		for _, e := range Describe(c, members{"alice"}) {
			switch {
			case e.Warning != nil:
				got = append(got, "!"+e.Warning.Reason)
			case e.Record.Kind == Tombstone:
				got = append(got, "tombstone:"+e.Record.Reason)
			default:
				got = append(got, string(e.Record.Kind))
				if (e.Record.Card != nil) != (e.Record.Kind == Object) {
					t.Errorf("%s: %s record with card %v", tt.name, e.Record.Kind, e.Record.Card)
				}
			}
		}
		if s := strings.Join(got, ","); s != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, s, tt.want)
		}
	}
}
