package store

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// TimeLayout is how eddy writes every timestamp on the wire: RFC 3339 in
// UTC with exactly six fractional digits (microseconds), so a client can
// parse and compare them as fixed-width strings.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// AppendTime appends t as a JSON string in TimeLayout, in UTC. Years 0
// to 9999 (every time eddy stores) are written digit by digit, about a
// third of time.AppendFormat's cost, which parses the layout on every
// call: a pull page writes a timestamp per commit.
func AppendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		b = append(b, '"')
		b = t.AppendFormat(b, TimeLayout)
		return append(b, '"')
	}
	h, mi, s := t.Clock()
	b = append(b, '"')
	b = appendDigits(b, y, 4)
	b = append(b, '-')
	b = appendDigits(b, int(mo), 2)
	b = append(b, '-')
	b = appendDigits(b, d, 2)
	b = append(b, 'T')
	b = appendDigits(b, h, 2)
	b = append(b, ':')
	b = appendDigits(b, mi, 2)
	b = append(b, ':')
	b = appendDigits(b, s, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond()/1000, 6)
	return append(b, 'Z', '"')
}

// appendDigits appends the n (at most 6) low decimal digits of v
// (0 ≤ v < 10ⁿ), zero-padded.
func appendDigits(b []byte, v, n int) []byte {
	start := len(b)
	b = append(b, "000000"[:n]...)
	for i := len(b) - 1; i >= start && v > 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
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

// MarshalJSON writes the wire row with ts in TimeLayout. A row whose
// payload is plain (see Record.MarshalJSON) and whose ts is in years 0
// to 9999 is written directly, byte for byte as encoding/json writes it.
func (r Row) MarshalJSON() ([]byte, error) {
	if plainTime(r.TS) && (r.Payload == nil || plainRaw(r.Payload)) {
		return r.appendStored(make([]byte, 0, 128+len(r.Payload))), nil
	}
	return marshal(r.wire())
}

// AppendJSON appends the row as json.Marshal renders it (HTML characters
// and U+2028/U+2029 escaped), its payload as stored: the compact JSON
// the changelog stored is copied, not scanned. (A ts past year 9999,
// which json.Marshal refuses, is written as TimeLayout writes it.)
func (r *Row) AppendJSON(b []byte) []byte {
	start := len(b)
	return htmlSafeFrom(r.appendStored(b), start)
}

// appendStored appends the row's JSON as encoding/json (not escaping
// HTML) writes it, but for the payload, copied as is: the store holds
// the compact JSON its encoder wrote, which encoding/json copies
// unchanged but for the HTML escapes a caller may apply
// (RawCommit.AppendJSON).
func (r *Row) appendStored(b []byte) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, r.Seq, 10)
	b = append(b, `,"ts":`...)
	b = AppendTime(b, r.TS)
	b = appendString(append(b, `,"actor":`...), r.Actor)
	b = appendString(append(b, `,"op":`...), r.Op)
	b = appendString(append(b, `,"entityId":`...), r.EntityID)
	b = appendString(append(b, `,"type":`...), r.Type)
	b = append(b, `,"payload":`...)
	if len(r.Payload) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, r.Payload...)
	}
	return append(b, '}')
}

// appendString appends s as a JSON string the way encoding/json writes
// it without HTML escaping; a plain string (the common case) is copied.
func appendString(b []byte, s string) []byte {
	if plain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	j, err := marshal(s)
	if err != nil { // unreachable: every string encodes
		return append(b, `""`...)
	}
	return append(b, j...)
}

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

// MarshalJSON writes the raw commit as Commit's MarshalJSON writes the
// commit it decodes to: the wire row's fields, then the stored changes,
// receipt and provenance as they are (they were stored compact, by the
// encoder that writes Commit; an empty one is null).
func (c RawCommit) MarshalJSON() ([]byte, error) {
	return c.appendJSON(make([]byte, 0, 256+len(c.Payload)+len(c.Changes)+len(c.Receipt)+len(c.Provenance))), nil
}

// appendJSON appends MarshalJSON's bytes to b.
func (c *RawCommit) appendJSON(b []byte) []byte {
	b = c.Row.appendStored(b)
	b = b[:len(b)-1]
	b = appendRawField(b, `,"changes":`, c.Changes)
	b = appendRawField(b, `,"receipt":`, c.Receipt)
	b = appendRawField(b, `,"provenance":`, c.Provenance)
	return append(b, '}')
}

// AppendJSON appends the raw commit as json.Marshal renders it (HTML
// characters and U+2028/U+2029 escaped), without encoding/json's second
// pass over the bytes: the stored JSON is compact already.
func (c *RawCommit) AppendJSON(b []byte) []byte {
	start := len(b)
	return htmlSafeFrom(c.appendJSON(b), start)
}

// htmlSafeFrom escapes the compact JSON b[start:] in place as
// AppendHTMLSafe does; b is returned as is when it needs no escape.
func htmlSafeFrom(b []byte, start int) []byte {
	if !needsHTMLEscape(b[start:]) {
		return b
	}
	j := slices.Clone(b[start:])
	return AppendHTMLSafe(b[:start], j)
}

// AppendHTMLSafe appends compact JSON j with <, >, &, U+2028 and U+2029
// escaped as json.Marshal escapes them; j is copied as is when it holds
// none (the common case).
func AppendHTMLSafe(b, j []byte) []byte {
	if !needsHTMLEscape(j) {
		return append(b, j...)
	}
	var buf bytes.Buffer
	json.HTMLEscape(&buf, j)
	return append(b, buf.Bytes()...)
}

// needsHTMLEscape reports whether j holds <, > or & or may hold U+2028
// or U+2029 (their UTF-8 starts with 0xE2). Four bytes.IndexByte passes
// (vectorised) take about a sixth of the time of one loop testing four
// bytes, on the ~500-byte commits a pull page writes.
func needsHTMLEscape(j []byte) bool {
	return bytes.IndexByte(j, '<') >= 0 || bytes.IndexByte(j, '>') >= 0 ||
		bytes.IndexByte(j, '&') >= 0 || bytes.IndexByte(j, 0xE2) >= 0
}

func appendRawField(b []byte, name string, raw json.RawMessage) []byte {
	b = append(b, name...)
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// MarshalJSON writes the record with its times in TimeLayout. A record
// whose strings and properties are plain printable ASCII (the common
// case: what encoding/json would copy unchanged) is written directly,
// byte for byte as the general path writes it.
func (r Record) MarshalJSON() ([]byte, error) {
	if b, ok := r.appendPlain(make([]byte, 0, 128+len(r.Properties))); ok {
		return b, nil
	}
	return r.marshalGeneral()
}

// marshalGeneral is MarshalJSON through encoding/json.
func (r Record) marshalGeneral() ([]byte, error) {
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

// appendPlain appends the record's JSON when every string and the
// properties are plain (see plain); false when one is not, and then the
// bytes appended are meaningless.
func (r *Record) appendPlain(b []byte) ([]byte, bool) {
	ok := plain(r.Type) && plain(r.ID) && (r.Properties == nil || plainRaw(r.Properties))
	b = append(b, `{"type":"`...)
	b = append(b, r.Type...)
	b = append(b, `","id":"`...)
	b = append(b, r.ID...)
	b = append(b, `","version":`...)
	b = strconv.AppendInt(b, r.Version, 10)
	b = append(b, `,"properties":`...)
	if len(r.Properties) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, r.Properties...)
	}
	b = append(b, `,"links":`...)
	if r.Links == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, l := range r.Links {
			ok = ok && plain(l.Rel) && plain(l.Target.Type) && plain(l.Target.ID)
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"rel":"`...)
			b = append(b, l.Rel...)
			b = append(b, `","target":{"type":"`...)
			b = append(b, l.Target.Type...)
			b = append(b, `","id":"`...)
			b = append(b, l.Target.ID...)
			b = append(b, `"}}`...)
		}
		b = append(b, ']')
	}
	if !plainTime(r.CreatedAt) || !plainTime(r.UpdatedAt) {
		return nil, false
	}
	b = append(b, `,"createdAt":`...)
	b = AppendTime(b, r.CreatedAt)
	b = append(b, `,"updatedAt":`...)
	b = AppendTime(b, r.UpdatedAt)
	return append(b, '}'), ok
}

// plain reports a string encoding/json writes as is between quotes:
// printable ASCII without '"' or '\\'.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// plainRaw reports JSON that encoding/json (not escaping HTML) copies
// unchanged: valid, printable ASCII with no whitespace.
func plainRaw(raw []byte) bool {
	for _, c := range raw {
		if c <= ' ' || c > 0x7e {
			return false
		}
	}
	return json.Valid(raw)
}

// plainTime reports a time wireTime writes in TimeLayout.
func plainTime(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}
