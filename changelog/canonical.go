package changelog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
)

// errTrailingData reports bytes after the first JSON value.
var errTrailingData = errors.New("trailing data after JSON value")

// Canonical returns the canonical form of a JSON value: object keys sorted
// (bytewise) at every depth, no insignificant whitespace, numbers exactly
// as written, strings escaped minimally and without HTML escaping. Two
// values with the same canonical form are byte-identical.
func Canonical(raw []byte) ([]byte, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	return encodeCanonical(v), nil
}

// CanonicalObject is Canonical for a value that must be a JSON object.
func CanonicalObject(raw []byte) ([]byte, error) {
	v, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	return encodeCanonical(v), nil
}

// decodeJSON decodes exactly one JSON value, keeping numbers as
// json.Number so that no precision is lost.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty JSON value")
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errTrailingData
	}
	return v, nil
}

// decodeObject decodes exactly one JSON object.
func decodeObject(raw []byte) (map[string]any, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object: %s", kindOfValue(v))
	}
	return obj, nil
}

// encodeCanonical encodes a decoded JSON value (map[string]any, []any,
// string, json.Number, bool, nil) canonically.
func encodeCanonical(v any) []byte {
	return appendCanonical(make([]byte, 0, 64), v)
}

func appendCanonical(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case json.Number:
		return append(b, x...)
	case string:
		return appendString(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, e)
		}
		return append(b, ']')
	case map[string]any:
		return appendObject(b, x)
	default:
		// Only values produced by decodeJSON and mergeValue reach here;
		// anything else is a programming error.
		panic(fmt.Sprintf("changelog: cannot encode %T canonically", v))
	}
}

func appendObject(b []byte, m map[string]any) []byte {
	keys := sortedKeys(m)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendCanonical(b, m[k])
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: quote, backslash and control
// characters are escaped, as are U+2028 and U+2029 (as encoding/json
// does); invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			b = appendASCII(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, `\u202`...)
			b = append(b, hexDigits[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

func appendASCII(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	if c < 0x20 {
		return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
	}
	return append(b, c)
}

// sortedKeys returns m's keys in bytewise order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// kindOfValue names the JSON kind of a decoded value for messages.
func kindOfValue(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// kindOfText is kindOfValue of what a JSON text ijson.Check accepted
// decodes to, read from its first byte.
func kindOfText(raw []byte) string {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 {
		return "empty"
	}
	switch t[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// canonicalEqual reports whether two decoded values encode identically.
func canonicalEqual(a, b any) bool {
	return bytes.Equal(encodeCanonical(a), encodeCanonical(b))
}
