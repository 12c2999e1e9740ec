package ijson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	for _, tc := range []struct {
		in   string
		want error // nil: accepted
		at   int
	}{
		{`{}`, nil, 0},
		{` {"a": [1, -2.5e10, true, false, null, "x\u00e9\ud83d\ude00"]} `, nil, 0},
		{`{"a":{"a":1},"b":{"a":2}}`, nil, 0},
		{`1e308`, nil, 0},
		{`1e-400`, nil, 0}, // underflows to 0: a float64 holds it
		{`"\u00e9"`, nil, 0},
		{ok, nil, 0},
		{`{"n": 1e400}`, ErrNumberRange, 6},
		{`[-1E+400]`, ErrNumberRange, 1},
		{`1` + strings.Repeat("0", 400), ErrNumberRange, 0},
		{"\"a\xffb\"", ErrInvalidUTF8, 2},
		{"{\"k\xc3\": 1}", ErrInvalidUTF8, 3},
		{`"\ud800"`, ErrInvalidUTF8, 1},
		{`"\udc00\ud800"`, ErrInvalidUTF8, 1},
		{`"\ud800\u0041"`, ErrInvalidUTF8, 1},
		{`{"a":1,"a":2}`, ErrDuplicateKey, 7},
		{`{"a":1,"\u0061":2}`, ErrDuplicateKey, 7},
		{`{"x":[{"b":1,"c":2,"b":3}]}`, ErrDuplicateKey, 19},
		{`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":0,"k11":1,"k12":2,"k13":3,"k14":4,"k15":5,"k16":6,"k17":7,"k3":8}`, ErrDuplicateKey, 135},
		{deep, ErrDepth, MaxDepth},
		{``, ErrSyntax, 0},
		{`{"a":1}x`, ErrSyntax, 7},
		{`{"a" 1}`, ErrSyntax, 5},
		{`[1,]`, ErrSyntax, 3},
		{`01`, ErrSyntax, 1},
		{`1.`, ErrSyntax, 2},
		{`"\x"`, ErrSyntax, 1},
		{"\"a\nb\"", ErrSyntax, 2},
		{`tru`, ErrSyntax, 0},
		{`{"a":1`, ErrSyntax, 6},
	} {
		err := Check([]byte(tc.in))
		name := tc.in
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		if tc.want == nil {
			if err != nil {
				t.Errorf("Check(%q) = %v, want nil", name, err)
			}
			continue
		}
		var e *Error
		if !errors.Is(err, tc.want) || !errors.As(err, &e) || e.Offset != tc.at {
			t.Errorf("Check(%q) = %v, want %v at byte %d", name, err, tc.want, tc.at)
		}
	}
}

func TestUnmarshalStrict(t *testing.T) {
	t.Parallel()
	var v struct{ A int }
	if err := UnmarshalStrict([]byte(`{"A":1,"A":2}`), &v); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := UnmarshalStrict([]byte(`{"B":1}`), &v); err == nil {
		t.Fatal("unknown field accepted")
	}
	if err := Unmarshal([]byte(`{"A":3}`), &v); err != nil || v.A != 3 {
		t.Fatalf("Unmarshal = %v, %+v", err, v)
	}
}

// FuzzCheck holds Check to its contract against encoding/json: what it
// accepts is valid JSON that decodes without loss; valid UTF-8 JSON it
// refuses is refused for a reason encoding/json would hide.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `[1e400]`, "\"\xff\"", `"\ud800"`, `{"a":{"b":[1,2,{"c":"\u00e9"}]}}`,
		`-0.5e-3`, `"\ud83d\ude00"`, `{"a":1,"\u0061":2}`, ` [ true , false , null ] `, `{"x":"y"} {}`, `1e-400`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := Check(b)
		if err == nil {
			if !json.Valid(b) || !utf8.Valid(b) {
				t.Fatalf("Check accepted %q, which is not valid UTF-8 JSON", b)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatalf("Check accepted %q, which does not decode: %v", b, err)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) || e.Offset < 0 || e.Offset > len(b) {
			t.Fatalf("Check(%q) = %v: not an *Error with an offset inside the text", b, err)
		}
		if json.Valid(b) && utf8.Valid(b) && errors.Is(err, ErrSyntax) {
			t.Fatalf("Check(%q) = %v, but encoding/json finds it well-formed", b, err)
		}
	})
}
