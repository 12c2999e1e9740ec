package postgres

import (
	"encoding/binary"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// A group commit sends its rows as parallel arrays (see pending.go), a
// few hundred elements per group, and pgx encodes each element of a Go
// slice through its generic array plan, which the profile of 16 writers
// put at a sixth of the group leader's time. The column arrays are
// therefore of the types below, which arrayCodec encodes in PostgreSQL's
// binary array format directly. Every other value, and every scan, goes
// through pgx's own codec.
type (
	// textArray is a text[] parameter.
	textArray []string
	// nullTextArray is a text[] parameter whose nil elements are NULL.
	nullTextArray []*string
	// int8Array is a bigint[] parameter.
	int8Array []int64
	// nullInt8Array is a bigint[] parameter whose nil elements are NULL.
	nullInt8Array []*int64
	// int4Array is an int[] parameter.
	int4Array []int32
	// timeArray is a timestamptz[] parameter.
	timeArray []time.Time
	// nullTimeArray is a timestamptz[] parameter whose nil elements are
	// NULL.
	nullTimeArray []*time.Time
)

// arrayOIDs are the array types arrayCodec takes over, with their
// element types.
var arrayOIDs = map[uint32]uint32{
	pgtype.TextArrayOID:        pgtype.TextOID,
	pgtype.Int8ArrayOID:        pgtype.Int8OID,
	pgtype.Int4ArrayOID:        pgtype.Int4OID,
	pgtype.TimestamptzArrayOID: pgtype.TimestamptzOID,
}

// registerArrays makes the connection's type map encode eddy's array
// types directly (arrayCodec).
func registerArrays(m *pgtype.Map) {
	for oid := range arrayOIDs {
		t, ok := m.TypeForOID(oid)
		if !ok {
			continue
		}
		m.RegisterType(&pgtype.Type{Name: t.Name, OID: oid, Codec: arrayCodec{Codec: t.Codec}})
	}
}

// arrayCodec is pgx's codec of an array type with a direct binary plan
// for the element types of eddy's array types.
type arrayCodec struct{ pgtype.Codec }

// PlanEncode implements pgtype.Codec.
func (c arrayCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if elem, ok := arrayOIDs[oid]; ok && format == pgtype.BinaryFormatCode && elemOID(value) == elem {
		return arrayPlan{elem}
	}
	return c.Codec.PlanEncode(m, oid, format, value)
}

// elemOID returns the element type of value, one of eddy's array types;
// 0 for any other value.
func elemOID(value any) uint32 {
	switch value.(type) {
	case textArray, nullTextArray:
		return pgtype.TextOID
	case int8Array, nullInt8Array:
		return pgtype.Int8OID
	case int4Array:
		return pgtype.Int4OID
	case timeArray, nullTimeArray:
		return pgtype.TimestamptzOID
	}
	return 0
}

// arrayPlan encodes eddy's array types in the binary array format
// (array_send): dimensions, a has-NULLs flag, the element type, each
// dimension's length and lower bound, then each element as its length
// (-1 for NULL) and its bytes.
type arrayPlan struct{ elem uint32 }

// Encode implements pgtype.EncodePlan.
func (p arrayPlan) Encode(value any, buf []byte) ([]byte, error) {
	switch v := value.(type) {
	case textArray:
		buf = appendElems(p, buf, v, appendText)
	case nullTextArray:
		buf = appendNullable(p, buf, v, appendText)
	case int8Array:
		buf = appendElems(p, buf, v, appendInt8)
	case nullInt8Array:
		buf = appendNullable(p, buf, v, appendInt8)
	case int4Array:
		buf = appendElems(p, buf, v, appendInt4)
	case timeArray:
		buf = appendElems(p, buf, v, appendTime)
	case nullTimeArray:
		buf = appendNullable(p, buf, v, appendTime)
	}
	return buf, nil
}

// appendElems appends the array of v, each element written by elem.
func appendElems[T any](p arrayPlan, buf []byte, v []T, elem func([]byte, T) []byte) []byte {
	buf = p.header(buf, len(v), false)
	for _, x := range v {
		buf = elem(buf, x)
	}
	return buf
}

// appendNullable appends the array of v, a nil element as NULL and any
// other written by elem.
func appendNullable[T any](p arrayPlan, buf []byte, v []*T, elem func([]byte, T) []byte) []byte {
	buf = p.header(buf, len(v), hasNil(v))
	for _, x := range v {
		if x == nil {
			buf = binary.BigEndian.AppendUint32(buf, nullLength)
			continue
		}
		buf = elem(buf, *x)
	}
	return buf
}

// nullLength is the element length that stands for NULL (-1).
const nullLength = 0xFFFFFFFF

// header appends the array header of n elements: one dimension, from
// 1 (an empty array too, as pgx sends it).
func (p arrayPlan) header(buf []byte, n int, nulls bool) []byte {
	flag := uint32(0)
	if nulls {
		flag = 1
	}
	buf = binary.BigEndian.AppendUint32(buf, 1)
	buf = binary.BigEndian.AppendUint32(buf, flag)
	buf = binary.BigEndian.AppendUint32(buf, p.elem)
	buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	return binary.BigEndian.AppendUint32(buf, 1)
}

// appendText appends a text element: its length and its bytes.
func appendText(buf []byte, s string) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
	return append(buf, s...)
}

// appendInt8 appends a bigint element: its length, 8, and its bytes.
func appendInt8(buf []byte, n int64) []byte {
	buf = binary.BigEndian.AppendUint32(buf, 8)
	return binary.BigEndian.AppendUint64(buf, uint64(n))
}

// appendInt4 appends an int element: its length, 4, and its bytes.
func appendInt4(buf []byte, n int32) []byte {
	buf = binary.BigEndian.AppendUint32(buf, 4)
	return binary.BigEndian.AppendUint32(buf, uint32(n))
}

// appendTime appends a timestamptz element (microsSinceY2K).
func appendTime(buf []byte, t time.Time) []byte {
	return appendInt8(buf, microsSinceY2K(t))
}

// y2k is PostgreSQL's epoch, from which timestamptz counts microseconds.
var y2k = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// microsSinceY2K is t as a binary timestamptz: microseconds since
// y2k, sub-microseconds dropped (as pgx does).
func microsSinceY2K(t time.Time) int64 {
	return (t.Unix()-y2k)*1_000_000 + int64(t.Nanosecond())/1000
}

// hasNil reports whether any element of v is nil.
func hasNil[T any](v []*T) bool {
	for _, p := range v {
		if p == nil {
			return true
		}
	}
	return false
}
