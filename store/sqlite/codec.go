package sqlite

import (
	"bytes"
	"cmp"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/eddy-run/eddy/store"
)

// micros encodes t as unix microseconds.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros decodes unix microseconds as a UTC time.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// utcMicro normalizes t to UTC at microsecond precision.
func utcMicro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// now is the current time, UTC, microseconds.
func now() time.Time { return utcMicro(time.Now()) }

// marshal encodes v as compact JSON without HTML escaping, so embedded raw
// JSON (properties, payloads) keeps its exact bytes.
func marshal(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// rawText stores a raw JSON document as exact text; empty becomes def.
func rawText(raw json.RawMessage, def string) string {
	if len(raw) == 0 {
		return def
	}
	return string(raw)
}

// snapRecord returns the stored form of a record inside a change or a
// receipt: a copy with properties and links never empty and times in UTC
// at microsecond precision. Kind and GroupVersions are not encoded.
func snapRecord(r *store.Record) *store.Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Properties = json.RawMessage(rawText(c.Properties, "{}"))
	if c.Links == nil {
		c.Links = []store.Link{}
	}
	c.CreatedAt = utcMicro(c.CreatedAt)
	c.UpdatedAt = utcMicro(c.UpdatedAt)
	return &c
}

// unsnapRecord normalizes a decoded snapshot: links never nil, times UTC.
func unsnapRecord(r *store.Record) {
	if r == nil {
		return
	}
	if r.Links == nil {
		r.Links = []store.Link{}
	}
	r.CreatedAt = utcMicro(r.CreatedAt)
	r.UpdatedAt = utcMicro(r.UpdatedAt)
}

// snapshot is the stored JSON of a record inside a receipt; nil gives SQL
// NULL.
func snapshot(r *store.Record) (any, error) {
	if r == nil {
		return nil, nil
	}
	return marshal(snapRecord(r))
}

// unsnapshot decodes a snapshot column; SQL NULL gives nil.
func unsnapshot(col sql.NullString) (*store.Record, error) {
	if !col.Valid {
		return nil, nil
	}
	var r store.Record
	if err := json.Unmarshal([]byte(col.String), &r); err != nil {
		return nil, err
	}
	unsnapRecord(&r)
	return &r, nil
}

// encodeChanges returns the changes column of a commit: the JSON array of
// its changes in ordinal order, snapshots in stored form. Ordinals must be
// distinct.
func encodeChanges(changes []store.Change) (string, error) {
	cs := make([]store.Change, len(changes))
	for i, ch := range changes {
		ch.Before, ch.After = snapRecord(ch.Before), snapRecord(ch.After)
		if ch.ConflictGroups == nil {
			ch.ConflictGroups = []string{}
		}
		cs[i] = ch
	}
	slices.SortStableFunc(cs, func(a, b store.Change) int { return cmp.Compare(a.Ordinal, b.Ordinal) })
	for i := 1; i < len(cs); i++ {
		if cs[i].Ordinal == cs[i-1].Ordinal {
			return "", fmt.Errorf("duplicate change ordinal %d", cs[i].Ordinal)
		}
	}
	return marshal(cs)
}

// decodeChanges decodes a changes column into a non-nil slice.
func decodeChanges(text string) ([]store.Change, error) {
	cs := []store.Change{}
	if err := json.Unmarshal([]byte(text), &cs); err != nil {
		return nil, fmt.Errorf("decode changes: %w", err)
	}
	if cs == nil {
		cs = []store.Change{}
	}
	for i := range cs {
		unsnapRecord(cs[i].Before)
		unsnapRecord(cs[i].After)
		if cs[i].ConflictGroups == nil {
			cs[i].ConflictGroups = []string{}
		}
	}
	return cs, nil
}

// secondEntity returns the entity other than the commit's primary one
// (Type, EntityID) that its changes touch, or nil. The commits table
// indexes two entities per commit, so a commit whose changes touch a third
// is refused.
func secondEntity(c *store.Commit) (*store.EntityKey, error) {
	primary := store.EntityKey{Type: c.Type, ID: c.EntityID}
	var second *store.EntityKey
	for _, ch := range c.Changes {
		k := store.EntityKey{Type: ch.Type, ID: ch.ID}
		switch {
		case k == primary:
		case second == nil:
			second = &k
		case k != *second:
			return nil, fmt.Errorf("changes touch %s/%s, a third entity", k.Type, k.ID)
		}
	}
	return second, nil
}

// normReceipt gives nil slices their empty form so JSON shows [].
func normReceipt(r store.Receipt) store.Receipt {
	if r.Accepted == nil {
		r.Accepted = []string{}
	}
	if r.Rejected == nil {
		r.Rejected = []store.RejectedProperty{}
	}
	return r
}

func encodeReceipt(r store.Receipt) (string, error) { return marshal(normReceipt(r)) }

func decodeReceipt(text string) (store.Receipt, error) {
	var r store.Receipt
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return r, err
	}
	return normReceipt(r), nil
}

func encodeStrings(s []string) (string, error) {
	if s == nil {
		s = []string{}
	}
	return marshal(s)
}

func decodeStrings(text string) ([]string, error) {
	s := []string{}
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return nil, err
	}
	if s == nil {
		s = []string{}
	}
	return s, nil
}

// recordCols are the entities columns every record query selects, in
// the order scanRecord reads them.
const recordCols = `type, id, version, kind, properties, links, group_versions, created_at, updated_at`

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanRecord reads one row of recordCols.
func scanRecord(sc scanner) (store.Record, error) {
	var (
		r             store.Record
		props         string
		links, groups string
		created, upd  int64
	)
	err := sc.Scan(&r.Type, &r.ID, &r.Version, &r.Kind, &props, &links, &groups, &created, &upd)
	if err != nil {
		return r, err
	}
	r.Properties = json.RawMessage(props)
	r.CreatedAt, r.UpdatedAt = fromMicros(created), fromMicros(upd)
	if err := json.Unmarshal([]byte(links), &r.Links); err != nil {
		return r, err
	}
	if r.Links == nil {
		r.Links = []store.Link{}
	}
	if err := json.Unmarshal([]byte(groups), &r.GroupVersions); err != nil {
		return r, err
	}
	return r, nil
}

// recordArgs are the insert arguments of an entities row after space.
func recordArgs(r *store.Record) ([]any, error) {
	links := r.Links
	if links == nil {
		links = []store.Link{}
	}
	lt, err := marshal(links)
	if err != nil {
		return nil, err
	}
	gt, err := marshal(r.GroupVersions)
	if err != nil {
		return nil, err
	}
	kind := r.Kind
	if kind == "" {
		kind = store.KindLive
	}
	return []any{r.Type, r.ID, r.Version, kind, rawText(r.Properties, "{}"), lt, gt,
		micros(r.CreatedAt), micros(r.UpdatedAt)}, nil
}

// keysJSON encodes entity keys as a JSON array of [type, id] pairs for
// json_each, so one statement serves any number of keys.
func keysJSON(keys []store.EntityKey) (string, error) {
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		pairs[i] = [2]string{k.Type, k.ID}
	}
	return marshal(pairs)
}
