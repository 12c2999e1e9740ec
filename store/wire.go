package store

import (
	"bytes"
	"encoding/json"
	"time"
)

// TimeLayout is how eddy writes every timestamp on the wire: RFC 3339 in
// UTC with exactly six fractional digits (microseconds), so a client can
// parse and compare them as fixed-width strings.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// AppendTime appends t as a JSON string in TimeLayout, in UTC.
func AppendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeLayout)
	return append(b, '"')
}

// wireTime is a time.Time that encodes in TimeLayout.
type wireTime time.Time

// MarshalJSON implements json.Marshaler.
func (t wireTime) MarshalJSON() ([]byte, error) {
	tt := time.Time(t)
	if y := tt.Year(); y < 0 || y > 9999 {
		return tt.MarshalJSON()
	}
	return AppendTime(nil, tt), nil
}

// rowWire is Row's JSON shape.
type rowWire struct {
	Seq      int64           `json:"seq"`
	TS       wireTime        `json:"ts"`
	Actor    string          `json:"actor"`
	Op       string          `json:"op"`
	EntityID string          `json:"entityId"`
	Type     string          `json:"type"`
	Payload  json.RawMessage `json:"payload"`
}

func (r *Row) wire() rowWire {
	return rowWire{Seq: r.Seq, TS: wireTime(r.TS), Actor: r.Actor, Op: r.Op, EntityID: r.EntityID, Type: r.Type, Payload: r.Payload}
}

// marshal encodes v without HTML escaping: the bytes eddy stores and
// serves are the bytes it was given. (An outer encoder that escapes HTML
// still does so when it copies these bytes.)
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// MarshalJSON writes the wire row with ts in TimeLayout.
func (r Row) MarshalJSON() ([]byte, error) { return marshal(r.wire()) }

// MarshalJSON writes the commit: its wire row's fields, then changes,
// receipt and provenance. (Commit embeds Row, so it must not inherit
// Row's MarshalJSON.)
func (c Commit) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		rowWire
		Changes    []Change   `json:"changes"`
		Receipt    Receipt    `json:"receipt"`
		Provenance Provenance `json:"provenance"`
	}{c.wire(), c.Changes, c.Receipt, c.Provenance})
}

// MarshalJSON writes the record with its times in TimeLayout.
func (r Record) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type       string          `json:"type"`
		ID         string          `json:"id"`
		Version    int64           `json:"version"`
		Properties json.RawMessage `json:"properties"`
		Links      []Link          `json:"links"`
		CreatedAt  wireTime        `json:"createdAt"`
		UpdatedAt  wireTime        `json:"updatedAt"`
	}{r.Type, r.ID, r.Version, r.Properties, r.Links, wireTime(r.CreatedAt), wireTime(r.UpdatedAt)})
}
