package rowcodec

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/eddy-run/eddy/store"
)

// The hand-written encoders below write exactly the bytes Marshal (that
// is, encoding/json without HTML escaping) writes for the same value; the
// oracle tests hold them to it. They spare a commit's encoding the
// reflection of encoding/json, which the write path pays per row.

// encode runs fn on a pooled buffer and returns what it wrote.
func encode(fn func(b *bytes.Buffer) error) (string, error) {
	e := encoders.Get().(*encoder)
	defer e.release()
	e.buf.Reset()
	if err := fn(&e.buf); err != nil {
		return "", err
	}
	return e.buf.String(), nil
}

const hex = "0123456789abcdef"

// appendString writes s as a JSON string the way encoding/json does with
// HTML escaping off: invalid UTF-8 becomes \ufffd, and U+2028 and U+2029
// are escaped.
func appendString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b.WriteString(s[start:i])
			switch c {
			case '\\', '"':
				b.WriteByte('\\')
				b.WriteByte(c)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(s[start:i])
			b.WriteString(`\ufffd`)
		case r == '\u2028' || r == '\u2029':
			b.WriteString(s[start:i])
			b.WriteString(`\u202`)
			b.WriteByte(hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// appendKey writes a JSON object key and its colon, after a comma unless
// it is the first field.
func appendKey(b *bytes.Buffer, key string, first bool) {
	if !first {
		b.WriteByte(',')
	}
	b.WriteByte('"')
	b.WriteString(key) // field names need no escaping
	b.WriteString(`":`)
}

func appendInt(b *bytes.Buffer, v int64) {
	b.Write(strconv.AppendInt(b.AvailableBuffer(), v, 10))
}

// errYearRange is the refusal of a time that cannot be written in RFC
// 3339, as time.Time.MarshalJSON words it.
var errYearRange = errors.New("time: year outside of range [0,9999]")

// appendTime writes t as store.Record's MarshalJSON writes its times (see
// store.TimeLayout).
func appendTime(b *bytes.Buffer, t time.Time) error {
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return errYearRange
	}
	b.Write(store.AppendTime(b.AvailableBuffer(), t))
	return nil
}

// appendRaw writes a raw JSON document compacted, as encoding/json writes
// a json.RawMessage; nil is null.
func appendRaw(b *bytes.Buffer, raw json.RawMessage) error {
	if raw == nil {
		b.WriteString("null")
		return nil
	}
	return json.Compact(b, raw)
}

func appendStrings(b *bytes.Buffer, v []string) {
	if v == nil {
		b.WriteString("null")
		return
	}
	b.WriteByte('[')
	for i, s := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		appendString(b, s)
	}
	b.WriteByte(']')
}

func appendLinks(b *bytes.Buffer, links []store.Link) {
	if links == nil {
		b.WriteString("null")
		return
	}
	b.WriteByte('[')
	for i, l := range links {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		appendKey(b, "rel", true)
		appendString(b, l.Rel)
		appendKey(b, "target", false)
		b.WriteByte('{')
		appendKey(b, "type", true)
		appendString(b, l.Target.Type)
		appendKey(b, "id", false)
		appendString(b, l.Target.ID)
		b.WriteString("}}")
	}
	b.WriteByte(']')
}

// appendGroupVersions writes a map with its keys sorted, as encoding/json
// does; nil is null.
func appendGroupVersions(b *bytes.Buffer, m map[string]int64) {
	if m == nil {
		b.WriteString("null")
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		appendString(b, k)
		b.WriteByte(':')
		appendInt(b, m[k])
	}
	b.WriteByte('}')
}

// appendSnapshot writes a record in its stored form inside a change or a
// receipt: properties and links never empty, times in UTC at microsecond
// precision, no Kind or GroupVersions; nil is null.
func appendSnapshot(b *bytes.Buffer, r *store.Record) error {
	if r == nil {
		b.WriteString("null")
		return nil
	}
	b.WriteByte('{')
	appendKey(b, "type", true)
	appendString(b, r.Type)
	appendKey(b, "id", false)
	appendString(b, r.ID)
	appendKey(b, "version", false)
	appendInt(b, r.Version)
	appendKey(b, "properties", false)
	if len(r.Properties) == 0 {
		b.WriteString("{}")
	} else if err := appendRaw(b, r.Properties); err != nil {
		return err
	}
	appendKey(b, "links", false)
	if r.Links == nil {
		b.WriteString("[]")
	} else {
		appendLinks(b, r.Links)
	}
	appendKey(b, "createdAt", false)
	if err := appendTime(b, microUTC(r.CreatedAt)); err != nil {
		return err
	}
	appendKey(b, "updatedAt", false)
	if err := appendTime(b, microUTC(r.UpdatedAt)); err != nil {
		return err
	}
	b.WriteByte('}')
	return nil
}

// appendChange writes a change with its snapshots in stored form and nil
// conflict groups as [].
func appendChange(b *bytes.Buffer, ch *store.Change) error {
	b.WriteByte('{')
	appendKey(b, "ordinal", true)
	appendInt(b, int64(ch.Ordinal))
	appendKey(b, "kind", false)
	appendString(b, ch.Kind)
	appendKey(b, "type", false)
	appendString(b, ch.Type)
	appendKey(b, "id", false)
	appendString(b, ch.ID)
	appendKey(b, "version", false)
	appendInt(b, ch.Version)
	appendKey(b, "before", false)
	if err := appendSnapshot(b, ch.Before); err != nil {
		return err
	}
	appendKey(b, "after", false)
	if err := appendSnapshot(b, ch.After); err != nil {
		return err
	}
	appendKey(b, "conflictGroups", false)
	if ch.ConflictGroups == nil {
		b.WriteString("[]")
	} else {
		appendStrings(b, ch.ConflictGroups)
	}
	b.WriteByte('}')
	return nil
}

func appendReceipt(b *bytes.Buffer, r *store.Receipt) error {
	b.WriteByte('{')
	first := true
	if r.MutationID != "" {
		appendKey(b, "mutationId", true)
		appendString(b, r.MutationID)
		first = false
	}
	appendKey(b, "status", first)
	appendString(b, r.Status)
	if r.Seq != 0 {
		appendKey(b, "seq", false)
		appendInt(b, r.Seq)
	}
	if r.Version != 0 {
		appendKey(b, "version", false)
		appendInt(b, r.Version)
	}
	appendKey(b, "accepted", false)
	appendStrings(b, r.Accepted)
	appendKey(b, "rejected", false)
	if r.Rejected == nil {
		b.WriteString("null")
	} else {
		b.WriteByte('[')
		for i, p := range r.Rejected {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('{')
			appendKey(b, "property", true)
			appendString(b, p.Property)
			appendKey(b, "reason", false)
			appendString(b, p.Reason)
			b.WriteByte('}')
		}
		b.WriteByte(']')
	}
	if r.Reason != nil {
		appendKey(b, "reason", false)
		b.WriteByte('{')
		appendKey(b, "code", true)
		appendString(b, r.Reason.Code)
		appendKey(b, "message", false)
		appendString(b, r.Reason.Message)
		b.WriteByte('}')
	}
	if len(r.Proposed) > 0 {
		appendKey(b, "proposed", false)
		if err := appendRaw(b, r.Proposed); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

func appendProvenance(b *bytes.Buffer, p *store.Provenance) {
	b.WriteByte('{')
	appendKey(b, "actor", true)
	appendString(b, p.Actor)
	appendKey(b, "via", false)
	appendString(b, p.Via)
	for _, f := range [...]struct{ key, v string }{
		{"requestId", p.RequestID}, {"mutationId", p.MutationID},
		{"trigger", p.Trigger}, {"delivery", p.Delivery},
	} {
		if f.v != "" {
			appendKey(b, f.key, false)
			appendString(b, f.v)
		}
	}
	if p.CausedBy != 0 {
		appendKey(b, "causedBy", false)
		appendInt(b, p.CausedBy)
	}
	if p.Root != 0 {
		appendKey(b, "root", false)
		appendInt(b, p.Root)
	}
	appendKey(b, "depth", false)
	appendInt(b, int64(p.Depth))
	if p.Traceparent != "" {
		appendKey(b, "traceparent", false)
		appendString(b, p.Traceparent)
	}
	b.WriteByte('}')
}
