// Package rowcodec encodes and decodes the JSON columns of store rows
// (records, changes, receipts, string lists) the same way in every
// storage driver, so both drivers store the same bytes and read back the
// same normalized structs: nil lists become [], snapshots carry times in
// UTC at microsecond precision. It holds no SQL.
package rowcodec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// Marshal encodes v as compact JSON without HTML escaping, so raw JSON
// embedded in v (properties, payloads) keeps its exact bytes.
func Marshal(v any) (string, error) {
	e := encoders.Get().(*encoder)
	defer e.release()
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))), nil
}

// maxPooledBuffer bounds the buffers kept for reuse, so one large
// document does not stay in memory.
const maxPooledBuffer = 64 << 10

func (e *encoder) release() {
	if e.buf.Cap() <= maxPooledBuffer {
		encoders.Put(e)
	}
}

// encoder is a reusable Marshal buffer and its encoder; Marshal copies
// the bytes out, so nothing refers to a pooled buffer after it returns.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// RawText returns a raw JSON document as exact text; empty becomes def.
func RawText(raw json.RawMessage, def string) string {
	if len(raw) == 0 {
		return def
	}
	return string(raw)
}

// EncodeStrings encodes a string list; nil becomes [].
func EncodeStrings[S ~string](v []S) (string, error) {
	if v == nil {
		v = []S{}
	}
	return Marshal(v)
}

// DecodeStrings decodes a string list into a non-nil slice.
func DecodeStrings(s string) ([]string, error) {
	v := []string{}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("decode string list: %w", err)
	}
	if v == nil {
		v = []string{}
	}
	return v, nil
}

// microUTC normalizes t to UTC at microsecond precision, the precision
// both drivers store.
func microUTC(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
