package rowcodec

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// scanner is what the drivers' scans call on an Arena column.
type scanner interface{ ScanBytes([]byte) error }

func TestArenaCommits(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.FixedZone("x", 3600))
	want := []store.RawCommit{
		{Row: store.Row{Seq: 1, TS: ts.UTC(), Actor: "a", Op: "put", EntityID: "e1", Type: "task", Payload: json.RawMessage(`{"n":1}`)},
			Changes: json.RawMessage(`[{"id":"e1"}]`), Receipt: json.RawMessage(`{"accepted":[]}`), Provenance: json.RawMessage(`{"actor":"a"}`)},
		{Row: store.Row{Seq: 2, TS: ts.UTC(), Actor: "bb", Op: "delete", EntityID: "e2", Type: "note", Payload: json.RawMessage(`null`)},
			Changes: json.RawMessage(`[]`), Receipt: json.RawMessage{}, Provenance: json.RawMessage(`{}`)},
	}
	a := NewArena(1, 8)
	for _, c := range want {
		dest := a.Dest()
		*dest[0].(*int64), *dest[1].(*time.Time) = c.Seq, ts
		cols := []string{c.Actor, c.Op, c.EntityID, c.Type, string(c.Payload), string(c.Receipt), string(c.Provenance), string(c.Changes)}
		for i, v := range cols {
			buf := []byte(v)
			if err := dest[2+i].(scanner).ScanBytes(buf); err != nil {
				t.Fatal(err)
			}
			clear(buf) // the driver's buffer is reused after the call
		}
		a.Add()
	}
	got := a.Commits()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Commits:\n got %+v\nwant %+v", got, want)
	}
	got[0].Payload = append(got[0].Payload, 'x')
	if string(got[1].Payload) != "null" {
		t.Fatalf("appending to one column changed the next: %q", got[1].Payload)
	}
}

func TestArenaEmpty(t *testing.T) {
	t.Parallel()
	if got := NewArena(0, 0).Commits(); got == nil || len(got) != 0 {
		t.Fatalf("Commits of an empty arena = %#v, want an empty slice", got)
	}
}
