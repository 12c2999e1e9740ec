package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParseApplyDocument feeds arbitrary files to what `eddy types apply`
// (the types section alone) and `eddy apply` (every section) read: it
// must never panic, refuses only with a usage error, and what it accepts
// is at least one section, each one JSON object per definition.
func FuzzParseApplyDocument(f *testing.F) {
	for _, seed := range []string{
		"types:\n  task:\n    strict: true\n    properties:\n      title: {kind: string}\n",
		`{"types": {"a": {}}}`,
		"types: {a: {}}\ntriggers: {t: {function: f}}\n",
		`{"functions": {"f": {"kind": "expr", "expr": "[]"}}, "views": {"v": {}}}`,
		"types: [",
		"types: {a: 1}",
		"",
		"- a\n- b\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, sections := range [][]applySection{applySections[:1], applySections} {
			doc, err := parseApplyDocument(data, sections)
			if err != nil {
				var ue *usageError
				if !errors.As(err, &ue) {
					t.Fatalf("error %v is not a usage error", err)
				}
				continue
			}
			if len(doc) == 0 {
				t.Fatal("accepted a document without any section")
			}
			for key, defs := range doc {
				if len(defs) == 0 {
					t.Fatalf("accepted an empty section %q", key)
				}
				for name, def := range defs {
					var m map[string]any
					if err := json.Unmarshal(bytes.TrimSpace(def), &m); err != nil {
						t.Fatalf("%s %q: definition %s is not a JSON object: %v", key, name, def, err)
					}
				}
			}
		}
	})
}
