package views

import (
	"encoding/json"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// readAll reads every record; readTypes only some types; readNot
// refuses one id.
type readAll struct{}

func (readAll) CanReadRecord(*store.Record) bool { return true }
func (readAll) CanReadTypes([]string) bool       { return true }

type readNot string

func (n readNot) CanReadRecord(r *store.Record) bool { return r.ID != string(n) }
func (readNot) CanReadTypes([]string) bool           { return true }

func task(id string, version int64, props string) *store.Record {
	return &store.Record{Type: "task", ID: id, Version: version, Kind: store.KindLive, Properties: json.RawMessage(props)}
}

func change(kind string, before, after *store.Record, version int64) *store.Change {
	ch := &store.Change{Kind: kind, Version: version, Before: before, After: after}
	for _, r := range []*store.Record{before, after} {
		if r != nil {
			ch.Type, ch.ID = r.Type, r.ID
		}
	}
	return ch
}

// projectOne projects ch with d for r; "" when nothing is sent.
func projectOne(d *Definition, ch *store.Change, r Reader) (Change, bool) {
	return d.Project(ch, d.Judge(ch), r)
}

func TestProjectTransitions(t *testing.T) {
	t.Parallel()
	alpha := mustView(t, "alpha", `{"version":"v1","types":["task"],"filter":{"fieldEquals":{"field":"project","expected":"alpha"}}}`)
	open := mustView(t, "open", `{"version":"v1","types":["task"],"filter":{"currentState":{"cel":"entity.properties.open == true"}}}`)
	inA := task("t1", 5, `{"open":true,"project":"alpha","title":"x"}`)
	inB := task("t1", 6, `{"open":false,"project":"beta","title":"x"}`)
	inA2 := task("t1", 7, `{"open":true,"project":"alpha","title":"y"}`)
	note := &store.Record{Type: "note", ID: "n1", Version: 8, Kind: store.KindLive, Properties: json.RawMessage(`{"project":"alpha","open":true}`)}
	tests := []struct {
		name   string
		view   *Definition
		ch     *store.Change
		reader Reader
		want   Kind // "" for nothing sent
		record *store.Record
	}{
		{"create inside: enter", alpha, change(store.ChangeCreated, nil, inA, 5), readAll{}, Upsert, inA},
		{"enter with an old create", alpha, change(store.ChangeUpdated, inB, inA2, 7), readAll{}, Upsert, inA2},
		{"stay", alpha, change(store.ChangeUpdated, inA, inA2, 7), readAll{}, Upsert, inA2},
		{"leave", alpha, change(store.ChangeUpdated, inA, inB, 6), readAll{}, RemovedFromScope, nil},
		{"delete held", alpha, change(store.ChangeDeleted, inA, nil, 9), readAll{}, Deleted, nil},
		{"delete never held", alpha, change(store.ChangeDeleted, inB, nil, 9), readAll{}, "", nil},
		{"outside on both sides", alpha, change(store.ChangeUpdated, inB, inB, 6), readAll{}, "", nil},
		{"other type", alpha, change(store.ChangeCreated, nil, note, 8), readAll{}, "", nil},
		{"unreadable after: leave without content", alpha, change(store.ChangeUpdated, inA, inA2, 7), readNot("t1"), "", nil},
		{"current: held now", open, change(store.ChangeUpdated, inB, inA2, 7), readAll{}, Upsert, inA2},
		{"current: not held now, never held", open, change(store.ChangeCreated, nil, inB, 6), readAll{}, RemovedFromScope, nil},
		{"current: leaves", open, change(store.ChangeUpdated, inA, inB, 6), readAll{}, RemovedFromScope, nil},
		{"current: delete never held", open, change(store.ChangeDeleted, inB, nil, 9), readAll{}, Deleted, nil},
		{"current: unreadable now", open, change(store.ChangeUpdated, inA, inA2, 7), readNot("t1"), RemovedFromScope, nil},
		{"current: outside its types", open, change(store.ChangeCreated, nil, note, 8), readAll{}, "", nil},
	}
	for _, tc := range tests {
		got, ok := projectOne(tc.view, tc.ch, tc.reader)
		if !ok {
			if tc.want != "" {
				t.Errorf("%s: nothing sent, want %s", tc.name, tc.want)
			}
			continue
		}
		if got.Kind != tc.want || got.Type != tc.ch.Type || got.ID != tc.ch.ID || got.Version != tc.ch.Version || got.Record != tc.record {
			t.Errorf("%s: got %+v, want %s of %s/%s at %d with record %v", tc.name, got, tc.want, tc.ch.Type, tc.ch.ID, tc.ch.Version, tc.record)
		}
	}
}

// TestProjectUnreadableBefore: a reader that could not read the before
// side never held it, so an unreadable entity leaving sends nothing.
func TestProjectUnreadableBefore(t *testing.T) {
	t.Parallel()
	alpha := mustView(t, "alpha", `{"version":"v1","types":["task"],"filter":{"cel":"entity.properties.project == 'alpha'"}}`)
	ch := change(store.ChangeUpdated, task("t9", 1, `{"project":"alpha"}`), task("t9", 2, `{"project":"beta"}`), 2)
	if got, ok := projectOne(alpha, ch, readNot("t9")); ok {
		t.Fatalf("sent %+v for an entity the reader never saw", got)
	}
}

func TestProjectFields(t *testing.T) {
	t.Parallel()
	d := mustView(t, "slim", `{"version":"v1","types":["task"],"fields":["title","project","title"],
		"filter":{"fieldEquals":{"field":"project","expected":"alpha"}}}`)
	if got := d.Spec().Fields; len(got) != 2 || got[0] != "project" || got[1] != "title" {
		t.Fatalf("fields = %v, want sorted and deduplicated", got)
	}
	rec := task("t1", 3, `{"project":"alpha","secret":"s","title":"x"}`)
	got, ok := projectOne(d, change(store.ChangeCreated, nil, rec, 3), readAll{})
	if !ok || string(got.Record.Properties) != `{"project":"alpha","title":"x"}` {
		t.Fatalf("projected %+v (%s)", got, got.Record.Properties)
	}
	if string(rec.Properties) != `{"project":"alpha","secret":"s","title":"x"}` {
		t.Fatal("projection changed the source record")
	}
}

func TestFieldEqualsNumbers(t *testing.T) {
	t.Parallel()
	d := mustView(t, "n", `{"version":"v1","types":["task"],"filter":{"fieldEquals":{"field":"n","expected":1.0}}}`)
	for props, want := range map[string]bool{`{"n":1}`: true, `{"n":1.0}`: true, `{"n":"1"}`: false, `{"n":true}`: false,
		`{"n":[1]}`: false, `{}`: false, `{"n":null}`: false, `{`: false} {
		if got := d.Holds(task("t", 1, props)); got != want {
			t.Errorf("%s: Holds = %v, want %v", props, got, want)
		}
	}
	if d.Holds(nil) || d.Holds(&store.Record{Type: "task", Kind: store.KindDeleted, Properties: json.RawMessage(`{"n":1}`)}) {
		t.Error("nil or a tombstone is held")
	}
}
