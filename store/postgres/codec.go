package postgres

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/eddy-run/eddy/store"
)

// The helpers below turn the row structs' JSON columns into exact text and
// back, normalizing nil slices so that JSON shows [] rather than null.

// encodeJSON marshals v to compact text without HTML escaping, so raw
// JSON embedded in v (properties, payloads) keeps its bytes.
func encodeJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// snapshot returns a copy of r as stored in a change or a receipt: links never nil,
// times in UTC at microsecond precision.
func snapshot(r store.Record) store.Record {
	if r.Links == nil {
		r.Links = []store.Link{}
	}
	if len(r.Properties) == 0 {
		r.Properties = json.RawMessage("{}")
	}
	r.CreatedAt = microUTC(r.CreatedAt)
	r.UpdatedAt = microUTC(r.UpdatedAt)
	r.Kind = ""
	r.GroupVersions = nil
	return r
}

// encodeSnapshot encodes a stored receipt's entity; nil stays NULL.
func encodeSnapshot(r *store.Record) (*string, error) {
	if r == nil {
		return nil, nil
	}
	s, err := encodeJSON(snapshot(*r))
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// decodeSnapshot decodes a stored receipt's entity; NULL is nil.
func decodeSnapshot(s *string) (*store.Record, error) {
	if s == nil {
		return nil, nil
	}
	var r store.Record
	if err := json.Unmarshal([]byte(*s), &r); err != nil {
		return nil, fmt.Errorf("decode snapshot: %w", err)
	}
	unsnapshot(&r)
	return &r, nil
}

// unsnapshot normalizes a decoded snapshot: links never nil, times in UTC
// at microsecond precision.
func unsnapshot(r *store.Record) {
	if r == nil {
		return
	}
	if r.Links == nil {
		r.Links = []store.Link{}
	}
	r.CreatedAt = microUTC(r.CreatedAt)
	r.UpdatedAt = microUTC(r.UpdatedAt)
}

// encodeChanges returns a commit's changes column: the JSON array of its
// changes in ordinal order, snapshots as stored. Ordinals must be
// distinct.
func encodeChanges(changes []store.Change) (string, error) {
	cs := make([]store.Change, len(changes))
	for i, ch := range changes {
		if ch.Before != nil {
			b := snapshot(*ch.Before)
			ch.Before = &b
		}
		if ch.After != nil {
			a := snapshot(*ch.After)
			ch.After = &a
		}
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
	return encodeJSON(cs)
}

// decodeChanges decodes a changes column into a non-nil slice.
func decodeChanges(s string) ([]store.Change, error) {
	cs := []store.Change{}
	if err := json.Unmarshal([]byte(s), &cs); err != nil {
		return nil, fmt.Errorf("decode changes: %w", err)
	}
	if cs == nil {
		cs = []store.Change{}
	}
	for i := range cs {
		unsnapshot(cs[i].Before)
		unsnapshot(cs[i].After)
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

// normalReceipt returns r with empty, non-nil Accepted and Rejected.
func normalReceipt(r store.Receipt) store.Receipt {
	if r.Accepted == nil {
		r.Accepted = []string{}
	}
	if r.Rejected == nil {
		r.Rejected = []store.RejectedProperty{}
	}
	return r
}

// encodeReceipt encodes a receipt.
func encodeReceipt(r store.Receipt) (string, error) { return encodeJSON(normalReceipt(r)) }

// decodeReceipt decodes a receipt.
func decodeReceipt(s string) (store.Receipt, error) {
	var r store.Receipt
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return r, fmt.Errorf("decode receipt: %w", err)
	}
	return normalReceipt(r), nil
}

// encodeStrings encodes a string list; nil becomes [].
func encodeStrings(v []string) (string, error) {
	if v == nil {
		v = []string{}
	}
	return encodeJSON(v)
}

// decodeStrings decodes a string list into a non-nil slice.
func decodeStrings(s string) ([]string, error) {
	v := []string{}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("decode string list: %w", err)
	}
	if v == nil {
		v = []string{}
	}
	return v, nil
}

// recordColumns are a record's entity-row columns as stored.
type recordColumns struct {
	properties    string
	links         string
	groupVersions string
}

// encodeRecord encodes a record's JSON columns.
func encodeRecord(r *store.Record) (recordColumns, error) {
	var c recordColumns
	c.properties = string(r.Properties)
	if c.properties == "" {
		c.properties = "{}"
	}
	links := r.Links
	if links == nil {
		links = []store.Link{}
	}
	var err error
	if c.links, err = encodeJSON(links); err != nil {
		return c, err
	}
	c.groupVersions, err = encodeJSON(r.GroupVersions)
	return c, err
}

// decodeRecord fills r's JSON fields from their stored columns.
func decodeRecord(r *store.Record, c recordColumns) error {
	r.Properties = json.RawMessage(c.properties)
	r.Links = []store.Link{}
	if err := json.Unmarshal([]byte(c.links), &r.Links); err != nil {
		return fmt.Errorf("decode links: %w", err)
	}
	if r.Links == nil {
		r.Links = []store.Link{}
	}
	if err := json.Unmarshal([]byte(c.groupVersions), &r.GroupVersions); err != nil {
		return fmt.Errorf("decode group versions: %w", err)
	}
	r.CreatedAt = r.CreatedAt.UTC()
	r.UpdatedAt = r.UpdatedAt.UTC()
	return nil
}
