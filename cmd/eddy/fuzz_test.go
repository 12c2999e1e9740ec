package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/eddy-run/eddy/problem"
)

// FuzzParseTypesDocument feeds arbitrary files to `eddy types apply`: it
// must never panic, and what it accepts is one JSON object per type.
func FuzzParseTypesDocument(f *testing.F) {
	for _, seed := range []string{
		"types:\n  task:\n    strict: true\n    properties:\n      title: {kind: string}\n",
		`{"types": {"a": {}}}`,
		"types: [",
		"types: {a: 1}",
		"",
		"- a\n- b\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		types, err := parseTypesDocument(data)
		if err != nil {
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v is not a usage error", err)
			}
			return
		}
		if len(types) == 0 {
			t.Fatal("accepted a document without types")
		}
		for name, def := range types {
			var m map[string]any
			if err := json.Unmarshal(bytes.TrimSpace(def), &m); err != nil {
				t.Fatalf("type %q: definition %s is not a JSON object: %v", name, def, err)
			}
		}
	})
}

// FuzzDecodeProblem feeds arbitrary error bodies to the client: it always
// yields a problem with a code.
func FuzzDecodeProblem(f *testing.F) {
	f.Add(400, []byte(`{"error": {"code": "bad_request", "message": "x"}}`))
	f.Add(502, []byte("<html>bad gateway</html>"))
	f.Add(500, []byte(`{"error": null}`))
	f.Add(404, []byte{})
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		var pe *problem.Error
		if err := decodeProblem(status, body); !errors.As(err, &pe) || pe.Code == "" {
			t.Fatalf("decodeProblem(%d, %q) = %v", status, body, err)
		}
	})
}
