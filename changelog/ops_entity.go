package changelog

import (
	"maps"
	"slices"
	"strings"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// entity is the current state of one key as an op sees it.
type entity struct {
	key    store.EntityKey
	rec    store.Record
	exists bool // a row exists (live or tombstone)
	live   bool
	props  map[string]any // decoded properties; empty unless live
}

// version is the entity's version for preconditions: 0 when missing.
func (e *entity) version() int64 {
	if e.live {
		return e.rec.Version
	}
	return 0
}

// links returns the entity's links, sorted and deduplicated (nil when
// missing).
func (e *entity) links() []store.Link {
	if !e.live {
		return nil
	}
	return normalizeLinks(e.rec.Links)
}

// load returns the current state of key from the environment.
func (a *applier) load(key store.EntityKey) (*entity, *rejection) {
	rec, ok := a.env.Records[key]
	e := &entity{key: key, rec: rec, exists: ok, props: map[string]any{}}
	e.live = ok && rec.Kind != store.KindDeleted
	if e.live && hasJSON(rec.Properties) {
		obj, err := decodeObject(rec.Properties)
		if err != nil {
			return nil, reject(problem.Internal, "%s: stored properties are invalid: %v", keyString(key), err)
		}
		e.props = obj
	}
	return e, nil
}

func notFound(key store.EntityKey) *rejection {
	return reject(problem.NotFound, "%s: no such entity", keyString(key))
}

// compareLinks orders links by rel, target type, target id.
func compareLinks(a, b store.Link) int {
	if c := strings.Compare(a.Rel, b.Rel); c != 0 {
		return c
	}
	if c := strings.Compare(a.Target.Type, b.Target.Type); c != 0 {
		return c
	}
	return strings.Compare(a.Target.ID, b.Target.ID)
}

// normalizeLinks returns a sorted, deduplicated, non-nil copy of ls.
func normalizeLinks(ls []store.Link) []store.Link {
	out := append([]store.Link{}, ls...)
	slices.SortFunc(out, compareLinks)
	return slices.Compact(out)
}

// draft is a proposed new state of one entity.
type draft struct {
	cur   *entity
	props map[string]any
	links []store.Link
	// force records an update even when nothing changed (a merge target).
	force bool
}

// finished is a draft judged and turned into a change and a record.
type finished struct {
	changed bool
	created bool
	states  map[string]string // state fields a transition moved
	change  store.Change
	record  store.Record
}

// finish validates a draft against its type's schema and the limits and
// builds its change and the record to store. A draft that changes nothing
// (and is not forced) comes back with changed false.
func (a *applier) finish(d draft) (*finished, *rejection) {
	cur := d.cur
	create := !cur.live
	d.links = normalizeLinks(d.links)
	propsChanged := create || !canonicalEqual(cur.props, d.props)
	if !propsChanged && !d.force && slices.Equal(cur.links(), d.links) {
		return &finished{}, nil
	}
	def := a.schema(cur.key.Type)
	f := &finished{changed: true, created: create}
	if propsChanged {
		if create {
			fillInitial(def, d.props)
		}
		states, rej := checkSchema(def, cur, d.props)
		if rej != nil {
			return nil, rej
		}
		f.states = states
	}
	body, rej := checkLimits(cur.key, d.props)
	if rej != nil {
		return nil, rej
	}
	groups := changedGroups(def, cur.props, d.props)
	f.record = a.record(cur, body, d.links, groups)
	f.change = a.change(cur, &f.record, groups)
	return f, nil
}

// checkLimits encodes props canonically and enforces MaxProperties and
// MaxEntityBytes.
func checkLimits(key store.EntityKey, props map[string]any) ([]byte, *rejection) {
	if len(props) > MaxProperties {
		return nil, reject(problem.Unprocessable, "%s: %d properties exceed the limit of %d", keyString(key), len(props), MaxProperties)
	}
	body := encodeCanonical(props)
	if len(body) > MaxEntityBytes {
		return nil, reject(problem.PayloadTooLarge, "%s: properties of %d bytes exceed the limit of %d", keyString(key), len(body), MaxEntityBytes)
	}
	return body, nil
}

// changedGroups returns the sorted distinct conflict groups of the
// top-level properties whose values differ between before and after.
func changedGroups(def *TypeDef, before, after map[string]any) []string {
	set := map[string]bool{}
	for k, v := range after {
		if old, ok := before[k]; !ok || !canonicalEqual(old, v) {
			set[def.GroupOf(k)] = true
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			set[def.GroupOf(k)] = true
		}
	}
	return sortedKeys(set)
}

// record builds the live row a draft leaves.
func (a *applier) record(cur *entity, body []byte, links []store.Link, groups []string) store.Record {
	rec := store.Record{
		Type:       cur.key.Type,
		ID:         cur.key.ID,
		Version:    a.env.Seq,
		Kind:       store.KindLive,
		Properties: body,
		Links:      links,
		CreatedAt:  a.env.Now,
		UpdatedAt:  a.env.Now,
	}
	var gv map[string]int64
	if cur.live {
		rec.CreatedAt = cur.rec.CreatedAt
		gv = cur.rec.GroupVersions
	}
	rec.GroupVersions = bumpGroups(gv, groups, a.env.Seq)
	return rec
}

// bumpGroups returns a copy of gv with every group set to seq.
func bumpGroups(gv map[string]int64, groups []string, seq int64) map[string]int64 {
	out := make(map[string]int64, len(gv)+len(groups))
	maps.Copy(out, gv)
	for _, g := range groups {
		out[g] = seq
	}
	return out
}

// change builds the change of a draft whose new row is rec.
func (a *applier) change(cur *entity, rec *store.Record, groups []string) store.Change {
	c := store.Change{
		Kind:           store.ChangeCreated,
		Type:           rec.Type,
		ID:             rec.ID,
		Version:        a.env.Seq,
		After:          snapshot(rec),
		ConflictGroups: groups,
	}
	if cur.live {
		c.Kind = store.ChangeUpdated
		c.Before = cur.snapshot()
	}
	return c
}

// snapshot returns an immutable live copy of rec for a change.
func snapshot(rec *store.Record) *store.Record {
	s := *rec
	s.Kind = store.KindLive
	s.Properties = append([]byte(nil), rec.Properties...)
	s.Links = normalizeLinks(rec.Links)
	s.GroupVersions = nil
	return &s
}

// snapshot returns the entity's current record as a change snapshot, with
// its properties in canonical form.
func (e *entity) snapshot() *store.Record {
	s := snapshot(&e.rec)
	s.Properties = encodeCanonical(e.props)
	return s
}

// tombstone deletes a live entity: its change and its tombstone row.
func (a *applier) tombstone(cur *entity) (store.Change, store.Record) {
	groups := changedGroups(a.schema(cur.key.Type), cur.props, nil)
	rec := store.Record{
		Type:          cur.key.Type,
		ID:            cur.key.ID,
		Version:       a.env.Seq,
		Kind:          store.KindDeleted,
		Properties:    []byte("{}"),
		Links:         []store.Link{},
		CreatedAt:     cur.rec.CreatedAt,
		UpdatedAt:     a.env.Now,
		GroupVersions: bumpGroups(cur.rec.GroupVersions, groups, a.env.Seq),
	}
	c := store.Change{
		Kind:           store.ChangeDeleted,
		Type:           rec.Type,
		ID:             rec.ID,
		Version:        a.env.Seq,
		Before:         cur.snapshot(),
		ConflictGroups: groups,
	}
	return c, rec
}
