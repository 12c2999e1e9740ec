package rowcodec

import (
	"bytes"
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
	c.Links, _ = encode(func(b *bytes.Buffer) error {
		if r.Links == nil {
			b.WriteString("[]")
		} else {
			appendLinks(b, r.Links)
		}
		return nil
	})
	c.GroupVersions, _ = encode(func(b *bytes.Buffer) error { appendGroupVersions(b, r.GroupVersions); return nil })
	return c, nil
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

// EncodeSnapshot encodes a stored receipt's entity in stored form (see
// appendSnapshot); nil gives nil (SQL NULL).
func EncodeSnapshot(r *store.Record) (*string, error) {
	if r == nil {
		return nil, nil
	}
	s, err := encode(func(b *bytes.Buffer) error { return appendSnapshot(b, r) })
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
