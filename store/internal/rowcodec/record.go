package rowcodec

import (
	"encoding/json"
	"fmt"

	"github.com/eddy-run/eddy/store"
)

// RecordColumns are the JSON columns of an entities row, as stored.
type RecordColumns struct {
	Properties    string
	Links         string
	GroupVersions string
}

// EncodeRecord encodes r's JSON columns: empty properties become {}, nil
// links [], and nil group versions null.
func EncodeRecord(r *store.Record) (RecordColumns, error) {
	c := RecordColumns{Properties: RawText(r.Properties, "{}")}
	links := r.Links
	if links == nil {
		links = []store.Link{}
	}
	var err error
	if c.Links, err = Marshal(links); err != nil {
		return c, err
	}
	c.GroupVersions, err = Marshal(r.GroupVersions)
	return c, err
}

// DecodeRecord fills r's JSON fields from their stored columns; links are
// never nil. Times are the driver's to decode.
func DecodeRecord(r *store.Record, c RecordColumns) error {
	r.Properties = json.RawMessage(c.Properties)
	r.Links = []store.Link{}
	if err := json.Unmarshal([]byte(c.Links), &r.Links); err != nil {
		return fmt.Errorf("decode links: %w", err)
	}
	if r.Links == nil {
		r.Links = []store.Link{}
	}
	if err := json.Unmarshal([]byte(c.GroupVersions), &r.GroupVersions); err != nil {
		return fmt.Errorf("decode group versions: %w", err)
	}
	return nil
}

// snapshot returns the stored form of a record inside a change or a
// receipt: a copy with properties and links never empty, times in UTC at
// microsecond precision, and no Kind or GroupVersions (neither is
// encoded). nil stays nil.
func snapshot(r *store.Record) *store.Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Properties = json.RawMessage(RawText(c.Properties, "{}"))
	if c.Links == nil {
		c.Links = []store.Link{}
	}
	c.CreatedAt = microUTC(c.CreatedAt)
	c.UpdatedAt = microUTC(c.UpdatedAt)
	c.Kind = ""
	c.GroupVersions = nil
	return &c
}

// EncodeSnapshot encodes a stored receipt's entity; nil gives nil (SQL
// NULL).
func EncodeSnapshot(r *store.Record) (*string, error) {
	if r == nil {
		return nil, nil
	}
	s, err := Marshal(snapshot(r))
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// DecodeSnapshot decodes a stored receipt's entity; nil (SQL NULL) gives
// nil.
func DecodeSnapshot(s *string) (*store.Record, error) {
	if s == nil {
		return nil, nil
	}
	var r store.Record
	if err := json.Unmarshal([]byte(*s), &r); err != nil {
		return nil, fmt.Errorf("decode snapshot: %w", err)
	}
	store.NormalizeSnapshot(&r)
	return &r, nil
}
