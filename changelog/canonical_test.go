package changelog

import (
	"testing"
)

func TestCanonical(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"sorted keys", `{"b":1,"a":2}`, `{"a":2,"b":1}`, false},
		{"nested sorted", `{"z":{"y":1,"x":[{"d":1,"c":2}]},"a":null}`, `{"a":null,"z":{"x":[{"c":2,"d":1}],"y":1}}`, false},
		{"whitespace", " {\n \"a\" : [ 1 , 2 ] ,\t\"b\": true } ", `{"a":[1,2],"b":true}`, false},
		{"numbers as written", `{"big":123456789012345678901234567890,"f":1.50,"e":1E+2,"neg":-0}`, `{"big":123456789012345678901234567890,"e":1E+2,"f":1.50,"neg":-0}`, false},
		{"no html escaping", `{"h":"<a href=\"x\">&</a>"}`, `{"h":"<a href=\"x\">&</a>"}`, false},
		{"escapes unescaped", `{"s":"\u0041\u00e9\/"}`, `{"s":"Aé/"}`, false},
		{"control chars", `{"s":"a\nb\u0001\t\r\\"}`, `{"s":"a\nb\u0001\t\r\\"}`, false},
		{"line separators", `{"s":"\u2028\u2029"}`, `{"s":"\u2028\u2029"}`, false},
		{"unicode kept", `"日本"`, `"日本"`, false},
		{"scalar", `true`, `true`, false},
		{"duplicate keys keep last", `{"a":1,"a":2}`, `{"a":2}`, false},
		{"empty", ``, ``, true},
		{"trailing", `{} {}`, ``, true},
		{"garbage", `{"a":}`, ``, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Canonical([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("Canonical(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if string(got) != tt.want {
				t.Errorf("Canonical(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestCanonicalObject(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`[]`, `"x"`, `null`, `1`} {
		if _, err := CanonicalObject([]byte(in)); err == nil {
			t.Errorf("CanonicalObject(%s) = nil error, want one", in)
		}
	}
	got, err := CanonicalObject([]byte(`{ "b": {}, "a": [] }`))
	if err != nil || string(got) != `{"a":[],"b":{}}` {
		t.Errorf("CanonicalObject = %s, %v", got, err)
	}
}

func TestCanonicalInvalidUTF8(t *testing.T) {
	t.Parallel()
	got, err := Canonical([]byte("\"a\xffb\""))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `"a\ufffdb"` && string(got) != "\"a\uFFFDb\"" {
		t.Errorf("Canonical(invalid utf8) = %q", got)
	}
}
