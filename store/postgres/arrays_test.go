package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// arrayCases are parameter arrays with what arrayCodec must get right:
// NULL elements, empty arrays, multi-byte text, negative numbers, and
// times before 2000 and with sub-microsecond parts (dropped).
func arrayCases() []struct {
	name  string
	value any
	plain any // the same elements as a plain slice, for pgx's own plan
} {
	a, b := "é and \"q\"", ""
	n1, n2 := int64(-5), int64(1<<40)
	t1 := time.Date(1999, 12, 31, 23, 59, 59, 999_999_000, time.UTC)
	t2 := time.Date(2026, 12, 6, 3, 4, 5, 123_456_789, time.FixedZone("x", 3600))
	return []struct {
		name  string
		value any
		plain any
	}{
		{"text", textArray{"a", a, b}, []string{"a", a, b}},
		{"text empty", textArray{}, []string{}},
		{"text null", nullTextArray{&a, nil, &b}, []*string{&a, nil, &b}},
		{"text no null", nullTextArray{&a, &b}, []*string{&a, &b}},
		{"int8", int8Array{n1, 0, n2}, []int64{n1, 0, n2}},
		{"int8 null", nullInt8Array{nil, &n1, &n2}, []*int64{nil, &n1, &n2}},
		{"int4", int4Array{-1, 0, 1 << 30}, []int32{-1, 0, 1 << 30}},
		{"timestamptz", timeArray{t1, t2}, []time.Time{t1, t2}},
		{"timestamptz null", nullTimeArray{&t1, nil, &t2}, []*time.Time{&t1, nil, &t2}},
	}
}

// TestArrayPlanMatchesPgx: arrayCodec's bytes are pgx's own binary
// encoding of the same elements.
func TestArrayPlanMatchesPgx(t *testing.T) {
	fast := pgtype.NewMap()
	registerArrays(fast)
	plain := pgtype.NewMap()
	oids := map[string]uint32{"text": pgtype.TextArrayOID, "int8": pgtype.Int8ArrayOID,
		"int4": pgtype.Int4ArrayOID, "timestamptz": pgtype.TimestamptzArrayOID}
	for _, tc := range arrayCases() {
		t.Run(tc.name, func(t *testing.T) {
			oid := oids[elemType(tc.name)]
			plan := fast.PlanEncode(oid, pgtype.BinaryFormatCode, tc.value)
			if _, ok := plan.(arrayPlan); !ok {
				t.Fatalf("plan for %T is %T, want arrayPlan", tc.value, plan)
			}
			got, err := plan.Encode(tc.value, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := plain.Encode(oid, pgtype.BinaryFormatCode, tc.plain, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("encoded\n%x\nwant (pgx)\n%x", got, want)
			}
		})
	}
}

// elemType is the element type a case's name starts with.
func elemType(name string) string {
	typ, _, _ := strings.Cut(name, " ")
	return typ
}

// TestArrayRoundTrip sends each array through a store's connection and
// reads it back as PostgreSQL stored it.
func TestArrayRoundTrip(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	casts := map[string]string{"text": "text[]", "int8": "bigint[]", "int4": "int[]", "timestamptz": "timestamptz[]"}
	for _, tc := range arrayCases() {
		t.Run(tc.name, func(t *testing.T) {
			cast := casts[elemType(tc.name)]
			var got, want string
			if err := s.pool.QueryRow(ctx, "SELECT $1::"+cast+"::text", tc.value).Scan(&got); err != nil {
				t.Fatal(err)
			}
			// The same elements through pgx's own plan, on the same server.
			if err := s.pool.QueryRow(ctx, "SELECT $1::"+cast+"::text", tc.plain).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("round trip = %s, want %s", got, want)
			}
		})
	}
}
