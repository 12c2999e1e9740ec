package changelog

import (
	"encoding/json"
	"testing"
)

func TestMergePatch(t *testing.T) {
	t.Parallel()
	tests := []struct{ target, patch, want string }{
		// RFC 7386 section 3.
		{`{"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"},"tags":["example","sample"],"content":"This will be unchanged"}`,
			`{"title":"Hello!","phoneNumber":"+01-123-456-7890","author":{"familyName":null},"tags":["example"]}`,
			`{"author":{"givenName":"John"},"content":"This will be unchanged","phoneNumber":"+01-123-456-7890","tags":["example"],"title":"Hello!"}`},
		// RFC 7386 appendix A.
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		// Beyond the RFC.
		{``, `{"a":1}`, `{"a":1}`},
		{`{"n":1.10}`, `{"m":2E3}`, `{"m":2E3,"n":1.10}`},
		{`{"a":{"x":1}}`, `{"a":{"y":{"z":null,"w":[null]}}}`, `{"a":{"x":1,"y":{"w":[null]}}}`},
	}
	for _, tt := range tests {
		got, err := MergePatch([]byte(tt.target), []byte(tt.patch))
		if err != nil {
			t.Errorf("MergePatch(%s, %s) error: %v", tt.target, tt.patch, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("MergePatch(%s, %s) = %s, want %s", tt.target, tt.patch, got, tt.want)
		}
	}
}

func TestMergePatchDoesNotMutate(t *testing.T) {
	t.Parallel()
	target := map[string]any{"a": map[string]any{"b": "c"}}
	patch := map[string]any{"a": map[string]any{"b": nil, "d": "e"}}
	_ = mergeValue(target, patch)
	if got := string(encodeCanonical(target)); got != `{"a":{"b":"c"}}` {
		t.Errorf("target mutated: %s", got)
	}
	if got := string(encodeCanonical(patch)); got != `{"a":{"b":null,"d":"e"}}` {
		t.Errorf("patch mutated: %s", got)
	}
}

func TestMergePatchErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ target, patch string }{
		{`{`, `{}`},
		{`{}`, `{`},
		{`{}`, ``},
		{`{}`, `{} 1`},
	} {
		if _, err := MergePatch([]byte(tt.target), []byte(tt.patch)); err == nil {
			t.Errorf("MergePatch(%q, %q) = nil error, want one", tt.target, tt.patch)
		}
	}
}

func FuzzMergePatch(f *testing.F) {
	seeds := [][2]string{
		{`{"a":"b"}`, `{"a":"c"}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`},
		{`[1,2]`, `{"a":"b","c":null}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`},
		{`{"a":"foo"}`, `"bar"`},
		{`{"n":1.0e10,"s":"<&>"}`, `{"n":null,"t":[{"x":null}]}`},
		{``, `null`},
	}
	for _, s := range seeds {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, target, patch []byte) {
		once, err := MergePatch(target, patch)
		if err != nil {
			return
		}
		if !json.Valid(once) {
			t.Fatalf("MergePatch output is not valid JSON: %q", once)
		}
		canon, err := Canonical(once)
		if err != nil || string(canon) != string(once) {
			t.Fatalf("MergePatch output is not canonical: %q (canonical %q, %v)", once, canon, err)
		}
		twice, err := MergePatch(once, patch)
		if err != nil {
			t.Fatalf("MergePatch on its own output: %v", err)
		}
		if string(twice) != string(once) {
			t.Fatalf("MergePatch is not idempotent: once %s, twice %s", once, twice)
		}
	})
}
