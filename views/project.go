package views

import (
	"encoding/json"

	"github.com/eddy-run/eddy/store"
)

// Kind is what a projected change tells a client.
type Kind string

// The kinds of a projected change.
const (
	// Upsert carries the full record: the entity entered the view (even
	// when its creation predates the cursor) or stayed in it.
	Upsert Kind = "upsert"
	// RemovedFromScope says the entity left the view: its type, id and
	// version, never its content. It is not a domain tombstone.
	RemovedFromScope Kind = "removed_from_scope"
	// Deleted is a canonical tombstone: the entity was deleted.
	Deleted Kind = "deleted"
)

// Change is one projected change of a view page. Every change carries the
// canonical version (the seq of the source commit); only an upsert
// carries a record.
type Change struct {
	Kind    Kind          `json:"kind"`
	Type    string        `json:"type"`
	ID      string        `json:"id"`
	Version int64         `json:"version"`
	Record  *store.Record `json:"record,omitempty"`
}

// Reader decides which record snapshots a reader may see. *auth.Reader
// is the one such rule; the projector asks it about every snapshot it
// judges, before and after, and a view is served only to a reader
// allowed every type it reads.
type Reader interface {
	CanReadRecord(r *store.Record) bool
	CanReadTypes(types []string) bool
}

// Identified is a Reader that names who it is (a token id). A frozen
// bootstrap opened by an identified reader is judged for it once, when
// it is materialized, and is then served to that reader only.
type Identified interface {
	Reader
	ReaderID() string
}

// Identify returns r named id.
func Identify(r Reader, id string) Identified { return identified{r, id} }

type identified struct {
	Reader
	id string
}

func (i identified) ReaderID() string { return i.id }

// readerID is r's name, or "" for an anonymous reader.
func readerID(r Reader) string {
	if i, ok := r.(Identified); ok {
		return i.ReaderID()
	}
	return ""
}

// Judgment is a view's membership verdict on both sides of one source
// change, before any reader's rule: whether the view holds the before and
// the after snapshot.
type Judgment struct {
	Before, After bool
}

// Judge applies the membership rule (Holds) to both sides of ch.
func (d *Definition) Judge(ch *store.Change) Judgment {
	return d.judge(ch, newSnapshot(ch.Before), newSnapshot(ch.After))
}

func (d *Definition) judge(ch *store.Change, before, after *snapshot) Judgment {
	return Judgment{Before: d.holds(before), After: d.holds(after)}
}

// Project turns one source change into the change a reader's copy of the
// view needs, given the view's judgment of it; false when it needs none.
// The reader's rule narrows each side: a side the reader may not read is
// not held, so its content is never sent. The transitions:
//
//   - held after: upsert with the full record (entering or staying);
//   - held before only: deleted for a tombstone, else removed_from_scope;
//   - held on neither side: nothing, except for a currentState view,
//     which cannot tell whether the reader held an older version: every
//     change of its types that it does not hold now is sent as deleted
//     or removed_from_scope (harmless for a client that never had it).
func (d *Definition) Project(ch *store.Change, j Judgment, r Reader) (Change, bool) {
	before := j.Before && r.CanReadRecord(ch.Before)
	after := j.After && r.CanReadRecord(ch.After)
	out := Change{Type: ch.Type, ID: ch.ID, Version: ch.Version}
	switch {
	case after:
		out.Kind, out.Record = Upsert, d.projectRecord(ch.After)
	case !before && !(d.current && d.types[ch.Type]):
		return Change{}, false
	case ch.After == nil:
		out.Kind = Deleted
	default:
		out.Kind = RemovedFromScope
	}
	return out, true
}

// projectRecord returns the record as the view sends it: with only the
// listed fields when the view has a projection.
func (d *Definition) projectRecord(rec *store.Record) *store.Record {
	if len(d.fields) == 0 {
		return rec
	}
	out := *rec
	out.Properties = pickFields(rec.Properties, d.fields)
	return &out
}

// pickFields returns the object props with only the named keys, in the
// canonical key order it came in.
func pickFields(props json.RawMessage, fields []string) json.RawMessage {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(props, &all); err != nil {
		return json.RawMessage(`{}`)
	}
	kept := make(map[string]json.RawMessage, len(fields))
	for _, f := range fields {
		if v, ok := all[f]; ok {
			kept[f] = v
		}
	}
	b, err := json.Marshal(kept) // encoding/json sorts map keys
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
