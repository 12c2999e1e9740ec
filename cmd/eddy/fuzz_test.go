package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
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
