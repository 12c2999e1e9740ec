package store

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

func TestWireTimes(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 8, 4, 12, 0, 0, 900000000, time.FixedZone("CEST", 2*3600))
	row := Row{Seq: 7, TS: ts, Actor: "owner", Op: "put", EntityID: "t1", Type: "task", Payload: json.RawMessage(`{"created":true}`)}
	rec := Record{Type: "task", ID: "t1", Version: 7, Properties: json.RawMessage(`{}`), Links: []Link{}, CreatedAt: ts, UpdatedAt: ts.Add(time.Microsecond)}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"row", row, `{"seq":7,"ts":"2026-08-04T10:00:00.900000Z","actor":"owner","op":"put","entityId":"t1","type":"task","payload":{"created":true}}`},
		{"row pointer", &row, `{"seq":7,"ts":"2026-08-04T10:00:00.900000Z","actor":"owner","op":"put","entityId":"t1","type":"task","payload":{"created":true}}`},
		{"record", rec, `{"type":"task","id":"t1","version":7,"properties":{},"links":[],"createdAt":"2026-08-04T10:00:00.900000Z","updatedAt":"2026-08-04T10:00:00.900001Z"}`},
		{"commit", Commit{Row: row, Changes: []Change{}, Receipt: Receipt{Status: "applied", Accepted: []string{}, Rejected: []RejectedProperty{}}, Provenance: Provenance{Actor: "owner", Via: "api"}},
			`{"seq":7,"ts":"2026-08-04T10:00:00.900000Z","actor":"owner","op":"put","entityId":"t1","type":"task","payload":{"created":true},"changes":[],"receipt":{"status":"applied","accepted":[],"rejected":[]},"provenance":{"actor":"owner","via":"api","depth":0}}`},
	}
	for _, tc := range tests {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	var back Commit
	if err := json.Unmarshal([]byte(tests[3].want), &back); err != nil || back.Seq != 7 || !back.TS.Equal(ts) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

// TestRecordPlainAgrees: the direct encoding of a record writes what
// encoding/json writes, byte for byte, whenever it applies.
func TestRecordPlainAgrees(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	strs := []string{"task", "t1", "a-b.c:d_e", "", "<&>", "é", "a\"b", `a\b`, "tab\t", "\u2028", "x y"}
	props := []string{`{}`, `{"a":1}`, `{"a":"<&>"}`, `{"a":"é"}`, `{"a": 1}`, `{"a":"\u2028"}`, ``, `{"a":[1,{"b":null}],"c":true}`, `{"a":"x\"y"}`}
	times := []time.Time{time.Date(2026, 8, 4, 12, 0, 0, 900000000, time.FixedZone("CEST", 2*3600)),
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("W", -2*3600)), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), {}}
	plainRuns := 0
	for range 3000 {
		r := Record{Type: pickS(rng, strs), ID: pickS(rng, strs), Version: rng.Int64N(1 << 40),
			Properties: json.RawMessage(pickS(rng, props)), CreatedAt: pickT(rng, times), UpdatedAt: pickT(rng, times)}
		switch rng.IntN(3) {
		case 0:
		case 1:
			r.Links = []Link{}
		default:
			for range 1 + rng.IntN(3) {
				r.Links = append(r.Links, Link{Rel: pickS(rng, strs), Target: EntityKey{Type: pickS(rng, strs), ID: pickS(rng, strs)}})
			}
		}
		want, err := r.marshalGeneral()
		got, ok := r.appendPlain(nil)
		if err != nil && ok {
			t.Fatalf("record %+v: plain encoded what the general path refuses (%v)", r, err)
		}
		if !ok {
			continue
		}
		plainRuns++
		if string(got) != string(want) {
			t.Fatalf("record %+v:\nplain   %s\ngeneral %s", r, got, want)
		}
	}
	if plainRuns < 100 {
		t.Fatalf("only %d records took the plain path", plainRuns)
	}
}

func pickS(rng *rand.Rand, xs []string) string       { return xs[rng.IntN(len(xs))] }
func pickT(rng *rand.Rand, xs []time.Time) time.Time { return xs[rng.IntN(len(xs))] }

// TestRowDirectAgrees: a row's direct encoding (appendStored) is
// encoding/json's, byte for byte, whenever MarshalJSON takes it, and
// AppendJSON is json.Marshal's (HTML escaped) for every row whose payload
// is compact JSON as stored, whatever its strings.
func TestRowDirectAgrees(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	strs := []string{"task", "t1", "put", "a-b.c:d_e", "", "<&>", "é", "a\"b", `a\b`, "tab\t", "\u2028", "x y", "\xff"}
	payloads := []string{`{}`, `{"properties":{"a":1}}`, `{"a":"<&>"}`, `{"a":"é"}`, `{"a": 1}`, `{"a":"\u2028"}`, ``, `null`, `{"a":[1,{"b":null}]}`}
	times := []time.Time{time.Date(2026, 8, 4, 12, 0, 0, 900000000, time.FixedZone("CEST", 2*3600)),
		time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("W", -2*3600)), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), {}}
	direct, appended := 0, 0
	for range 3000 {
		r := Row{Seq: rng.Int64N(1 << 40), TS: pickT(rng, times), Actor: pickS(rng, strs), Op: pickS(rng, strs),
			EntityID: pickS(rng, strs), Type: pickS(rng, strs)}
		p := pickS(rng, payloads)
		if p != "" || rng.IntN(2) == 0 {
			r.Payload = json.RawMessage(p)
		}
		want, err := marshal(r.wire())
		if plainTime(r.TS) && (r.Payload == nil || plainRaw(r.Payload)) {
			direct++
			if err != nil {
				t.Fatalf("row %+v: MarshalJSON writes directly what the general path refuses (%v)", r, err)
			}
			if got := r.appendStored(nil); string(got) != string(want) {
				t.Fatalf("row %+v:\ndirect  %s\ngeneral %s", r, got, want)
			}
		}
		if !plainTime(r.TS) || p == `{"a": 1}` || (p == "" && r.Payload != nil) { // not as stored
			continue
		}
		appended++
		html, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("row %+v: json.Marshal: %v", r, err)
		}
		if got := r.AppendJSON([]byte("x")); string(got) != "x"+string(html) {
			t.Fatalf("row %+v:\nAppendJSON   %s\njson.Marshal %s", r, got[1:], html)
		}
	}
	if direct < 100 || appended < 100 {
		t.Fatalf("only %d rows took the direct path and %d were appended", direct, appended)
	}
}

// TestAppendTimeAgrees: AppendTime writes what time.AppendFormat writes
// in TimeLayout, in UTC, for any time, zone and fraction.
func TestAppendTimeAgrees(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	zones := []*time.Location{time.UTC, time.FixedZone("E", 14*3600), time.FixedZone("W", -12*3600-30*60)}
	edges := []time.Time{{}, time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 12, 31, 23, 0, 0, 0, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 1000, time.UTC), time.Date(9999, 12, 31, 23, 0, 0, 0, time.FixedZone("W", -2*3600))}
	check := func(tm time.Time) {
		want := `"` + tm.UTC().Format(TimeLayout) + `"`
		if got := string(AppendTime([]byte("x"), tm)); got != "x"+want {
			t.Fatalf("%v: got %s, want %s", tm, got[1:], want)
		}
	}
	for _, tm := range edges {
		check(tm)
	}
	for range 20000 {
		sec := rng.Int64N(253402300800+2*86400) - 62135596800 - 86400 // years 0 to 9999, and a day past each end
		check(time.Unix(sec, rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))]))
	}
}

func BenchmarkAppendTime(b *testing.B) {
	tm := time.Date(2026, 12, 2, 17, 45, 3, 123456789, time.UTC)
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = AppendTime(buf[:0], tm)
	}
}

// FuzzRowAppendJSON: for any strings and any payload stored as the
// changelog stores it (compact JSON), AppendJSON writes json.Marshal's
// bytes.
func FuzzRowAppendJSON(f *testing.F) {
	f.Add(int64(1), "owner", "put", "t1", "task", []byte(`{"n":1}`))
	f.Add(int64(7), "<&>", "a\"b", "é\u2028", "tab\t", []byte(`{"a":"<&>\u2029"}`))
	f.Add(int64(-3), "\xff", "", `a\b`, "x y", []byte(`null`))
	f.Add(int64(0), "", "", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, seq int64, actor, op, id, typ string, payload []byte) {
		r := Row{Seq: seq, TS: time.Date(2026, 8, 4, 12, 0, 0, 123456000, time.UTC), Actor: actor, Op: op, EntityID: id, Type: typ}
		if payload != nil {
			var buf bytes.Buffer
			if json.Compact(&buf, payload) != nil || buf.Len() == 0 {
				return
			}
			r.Payload = buf.Bytes()
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("json.Marshal(%+v): %v", r, err)
		}
		if got := r.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("row %+v:\nAppendJSON   %s\njson.Marshal %s", r, got, want)
		}
	})
}
