package client

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"
)

func TestDecodeFrame(t *testing.T) {
	t.Parallel()
	cases := []struct {
		line string
		kind frameKind
		bad  bool
	}{
		{`{"bookmark":0}`, frameBookmark, false},
		{` {"bookmark": 12} `, frameBookmark, false},
		{`{}`, frameHeartbeat, false},
		{`{"seq":4190,"ts":"2026-08-04T10:00:00.183742Z","actor":"owner","op":"put","entityId":"kq3v9x2m41pf","type":"task","payload":{"created":true}}`, frameRow, false},
		{`{"error":{"code":"unavailable","message":"shutting down"}}`, frameError, false},
		{`{"future":true}`, frameUnknown, false},
		{`{"bookmark":-1}`, 0, true},
		{`{"bookmark":1.5}`, 0, true},
		{`{"bookmark":1,"x":2}`, 0, true},
		{`{"seq":0}`, 0, true},
		{`{"seq":"7"}`, 0, true},
		{`{"seq":3,"ts":"yesterday"}`, 0, true},
		{`{"error":{"message":"no code"}}`, 0, true},
		{`{"error":"boom"}`, 0, true},
		{`null`, 0, true},
		{`[1]`, 0, true},
		{`{"bookmark":1}{}`, 0, true},
		{``, 0, true},
	}
	for _, tc := range cases {
		f, err := decodeFrame([]byte(tc.line))
		switch {
		case tc.bad && !errors.Is(err, ErrBadFrame):
			t.Errorf("%s: err = %v, want ErrBadFrame", tc.line, err)
		case !tc.bad && (err != nil || f.kind != tc.kind):
			t.Errorf("%s: frame %+v err %v, want kind %d", tc.line, f, err, tc.kind)
		}
	}
}

// FuzzDecodeFrame feeds arbitrary lines to the frame decoder: it never
// panics, every frame it accepts is well formed (a row with a positive
// seq, a bookmark >= 0, an error with a code), and a decoded row or
// bookmark encodes back to a line that decodes to the same frame.
func FuzzDecodeFrame(f *testing.F) {
	for _, seed := range []string{
		`{"bookmark":0}`, `{}`, `{"error":{"code":"compacted","message":"m","details":{"horizon":5}}}`,
		`{"seq":1,"ts":"2026-08-04T10:00:00.183742Z","actor":"owner","op":"put","entityId":"a","type":"task","payload":{"created":true,"properties":["t"]}}`,
		`{"seq":2,"ts":"2026-08-04T10:00:00.123456789+02:00","actor":"a\u00e9","op":"fire","entityId":"t","type":"eddy.trigger","payload":{"scheduledAt":"x"}}`,
		`{"x":1}`, `{"seq":null}`, `{"bookmark":"1"}`, `nul`, `{"seq":9223372036854775807,"ts":"2026-08-04T10:00:00Z"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fr, err := decodeFrame(line)
		if err != nil {
			if !errors.Is(err, ErrBadFrame) {
				t.Fatalf("error %v is not ErrBadFrame", err)
			}
			return
		}
		switch fr.kind {
		case frameRow:
			if fr.row.Seq < 1 {
				t.Fatalf("row with seq %d", fr.row.Seq)
			}
			b, err := json.Marshal(fr.row)
			if err != nil {
				return // a time outside what RFC 3339 can write
			}
			again, err := decodeFrame(b)
			if err != nil || again.kind != frameRow {
				t.Fatalf("re-encoded row %s: %v", b, err)
			}
			b2, _ := json.Marshal(again.row)
			third, err := decodeFrame(b2)
			if err != nil || !reflect.DeepEqual(third.row, again.row) {
				t.Fatalf("row does not round-trip: %s then %s", b, b2)
			}
		case frameBookmark:
			if fr.bookmark < 0 {
				t.Fatalf("bookmark %d", fr.bookmark)
			}
			again, err := decodeFrame([]byte(`{"bookmark":` + strconv.FormatInt(fr.bookmark, 10) + `}`))
			if err != nil || again.bookmark != fr.bookmark {
				t.Fatalf("bookmark %d does not round-trip: %v", fr.bookmark, err)
			}
		case frameError:
			if fr.err == nil || fr.err.Code == "" {
				t.Fatalf("error frame without a code: %+v", fr.err)
			}
		}
	})
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	e := &Error{Code: "conflict", Message: "version is 2", Details: map[string]any{"limit": float64(7), "half": 1.5}}
	if e.Error() != "conflict: version is 2" || (&Error{Code: "x"}).Error() != "x" {
		t.Fatalf("Error() = %q", e.Error())
	}
	if v, ok := e.Detail("limit"); !ok || v != float64(7) {
		t.Fatalf("Detail = %v %v", v, ok)
	}
	if _, ok := e.DetailInt("half"); ok {
		t.Fatal("DetailInt accepted 1.5")
	}
	if _, ok := e.Receipt(); ok {
		t.Fatal("Receipt without details.receipt")
	}
	ce := &CompactedError{From: 5, Horizon: 9, Err: &Error{Code: "compacted"}}
	want := "compacted: cannot resume from 5: history starts after 9 (the horizon); re-list, then continue from the fresh head"
	if ce.Error() != want || !IsCode(ce, "compacted") {
		t.Fatalf("CompactedError = %q", ce.Error())
	}
	for k, want := range map[EventKind]string{EventRow: "row", EventBookmark: "bookmark", EventHeartbeat: "heartbeat", 0: "unknown"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q", k, k.String())
		}
	}
}
