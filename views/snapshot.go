package views

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/store"
)

// snapshot is one record snapshot as membership judges it: its
// properties are checked, the values it is asked for decoded, and its
// CEL binding built, on first use and shared by every view judging it.
// A snapshot is used by one goroutine.
type snapshot struct {
	rec     *store.Record
	checked bool           // valid is set
	valid   bool           // the properties are a JSON object
	values  map[string]any // decoded property values, by name
	bind    *predicate.Binding
}

// newSnapshot wraps rec; nil stays nil.
func newSnapshot(rec *store.Record) *snapshot {
	if rec == nil {
		return nil
	}
	return &snapshot{rec: rec}
}

// property returns a top-level property's decoded value, as decoding
// the whole object would give it (the last of duplicate keys wins).
// Properties that are not a JSON object hold nothing.
func (s *snapshot) property(name string) (any, bool) {
	if !s.checked {
		s.checked = true
		s.valid = json.Valid(s.rec.Properties) && firstByte(s.rec.Properties) == '{'
	}
	if !s.valid {
		return nil, false
	}
	v, ok := s.values[name]
	if !ok {
		v = s.lookup(name)
		if s.values == nil {
			s.values = map[string]any{}
		}
		s.values[name] = v
	}
	if v == absent {
		return nil, false
	}
	return v, true
}

// absent marks a property looked up and not found.
var absent = new(int)

// lookup decodes one property of the valid object s.rec.Properties; a
// key spelled with escapes sends it to a whole decode.
func (s *snapshot) lookup(name string) any {
	raw, found, ok := topLevel(s.rec.Properties, name)
	if !ok {
		var all map[string]any
		_ = json.Unmarshal(s.rec.Properties, &all) // valid: cannot fail
		if v, in := all[name]; in {
			return v
		}
		return absent
	}
	if !found {
		return absent
	}
	return decodeValue(raw)
}

// decodeValue decodes one valid JSON value as encoding/json decodes it
// into an any: plain strings, literals and numbers directly, the rest
// through encoding/json.
func decodeValue(raw []byte) any {
	switch raw[0] {
	case '"':
		if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
			return string(raw[1 : len(raw)-1])
		}
	case 't':
		return true
	case 'f':
		return false
	case 'n':
		return nil
	case '{', '[':
	default:
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return f
		}
	}
	var v any
	_ = json.Unmarshal(raw, &v) // a value of a valid object
	return v
}

func firstByte(b []byte) byte {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

// topLevel finds the last member key of the valid JSON object obj and
// returns its value's bytes; ok is false when a key holds an escape (the
// caller decodes the whole object then).
func topLevel(obj []byte, key string) (val []byte, found, ok bool) {
	i := skipSpace(obj, 0) + 1 // past '{'
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] == '}' {
			return val, found, true
		}
		if obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
		end := skipString(obj, i)
		k := obj[i+1 : end-1]
		if bytes.IndexByte(k, '\\') >= 0 {
			return nil, false, false
		}
		i = skipSpace(obj, end) + 1 // past ':'
		i = skipSpace(obj, i)
		vend := skipValue(obj, i)
		if string(k) == key {
			val, found = obj[i:vend], true
		}
		i = vend
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the end of the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the end of the valid JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// binding returns the snapshot's CEL activation.
func (s *snapshot) binding() *predicate.Binding {
	if s.bind == nil {
		s.bind = predicate.Bind(s.rec)
	}
	return s.bind
}
