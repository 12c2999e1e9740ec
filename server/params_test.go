package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/eddy-run/eddy/problem"
)

func TestCheckParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query string
		param string // "" = accepted
	}{
		{"", ""},
		{"from=1&types=a&types=b", ""},
		{"from=1&from=2", "from"},
		{"zzz=1", "zzz"},
		{"type=a", "type"},
		{"excludeActor=x", "excludeActor"},
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		err := checkParams(q, []string{"from", "types", "excludeActors"}, []string{"types"})
		var pe *problem.Error
		errors.As(err, &pe)
		switch {
		case tt.param == "" && err != nil:
			t.Errorf("%q: %v", tt.query, err)
		case tt.param != "" && (pe == nil || pe.Details["parameter"] != tt.param):
			t.Errorf("%q: %v, want bad_request naming %s", tt.query, err, tt.param)
		}
	}
}

func TestSeqAndLimitParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query   string
		seq     int64
		has     bool
		limit   int
		wantErr bool
	}{
		{"", 0, false, defaultLimit, false},
		{"from=0&limit=1", 0, true, 1, false},
		{"from=42&limit=1000", 42, true, 1000, false},
		{"from=-1", 0, false, 0, true},
		{"from=01x", 0, false, 0, true},
		{"from=9223372036854775808", 0, false, 0, true},
		{"limit=0", 0, false, 0, true},
		{"limit=-5", 0, false, 0, true},
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		seq, has, err := seqParam(q, "from")
		limit, lerr := limitParam(q)
		if err == nil {
			err = lerr
		}
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v", tt.query, err)
			continue
		}
		if !tt.wantErr && (seq != tt.seq || has != tt.has || limit != tt.limit) {
			t.Errorf("%q = %d %v %d", tt.query, seq, has, limit)
		}
	}
}

func TestIfMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header string
		want   int64
		ok     bool
		bad    bool
	}{
		{"", 0, false, false},
		{"7", 7, true, false},
		{`"7"`, 7, true, false},
		{`W/"7"`, 7, true, false},
		{` 12 `, 12, true, false},
		{"*", 0, false, true},
		{`"7`, 0, false, true},
		{"-3", 0, false, true},
		{`"a"`, 0, false, true},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodPut, "/", nil)
		r.Header.Set("If-Match", tt.header)
		got, ok, err := ifMatch(r)
		if (err != nil) != tt.bad || got != tt.want || ok != tt.ok {
			t.Errorf("If-Match %q = %d, %v, %v", tt.header, got, ok, err)
		}
	}
}

func FuzzListCursor(f *testing.F) {
	f.Add(int64(0), "a")
	f.Add(int64(99), "task:1.x")
	f.Add(int64(-1), "")
	f.Fuzz(func(t *testing.T, head int64, after string) {
		tok := encodeListCursor(listCursor{Head: head, After: after})
		got, err := decodeListCursor(url.Values{"after": {tok}})
		if err == nil && (got.Head != head || got.After != after) {
			t.Fatalf("round trip %d %q = %+v", head, after, got)
		}
		// Arbitrary input never panics.
		_, _ = decodeListCursor(url.Values{"after": {after}})
	})
}

func FuzzIfMatch(f *testing.F) {
	for _, s := range []string{"7", `"7"`, `W/"7"`, `W/""`, `"`, "*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		r := httptest.NewRequest(http.MethodPut, "/", nil)
		r.Header["If-Match"] = []string{h}
		v, ok, err := ifMatch(r)
		if ok && (err != nil || v < 0) {
			t.Fatalf("If-Match %q = %d, %v, %v", h, v, ok, err)
		}
	})
}
