package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Output formats of -o.
const (
	outDefault  = ""
	outJSON     = "json"
	outYAML     = "yaml"
	outWide     = "wide"
	outName     = "name"
	outJSONPath = "jsonpath"
)

// outputFormat is a parsed -o value.
type outputFormat struct {
	kind     string    // one of the out* constants
	template *jsonPath // for jsonpath=...
}

// parseOutput parses -o: json, yaml, wide, name or jsonpath=TEMPLATE.
func parseOutput(s string) (outputFormat, error) {
	switch s {
	case outDefault, outJSON, outYAML, outWide, outName:
		return outputFormat{kind: s}, nil
	}
	if tmpl, ok := strings.CutPrefix(s, "jsonpath="); ok {
		p, err := parseJSONPath(tmpl)
		if err != nil {
			return outputFormat{}, usagef("-o jsonpath: %v", err)
		}
		return outputFormat{kind: outJSONPath, template: p}, nil
	}
	return outputFormat{}, usagef("-o %q: want json, yaml, wide, name or jsonpath=TEMPLATE", s)
}

// view is what a command prints: a resource (or a list of them) and how
// to show it as a table and by name.
type view struct {
	// value is the resource: any value that encodes to JSON.
	value any
	// kind names the resource for -o name ("function", "trigger", ...).
	kind string
	// names are the resources' names for -o name (nil: the value's
	// "name", "id" or "type" members).
	names []string
	// table writes the default (or, wide set, the wide) table; nil shows
	// the value as indented JSON by default. A get's table is its row of
	// the list's table, so get and list print the same columns.
	table func(tw io.Writer, wide bool)
	// wideOnly keeps JSON the default and shows the table for -o wide
	// only: entities, whose list prints JSON by default too.
	wideOnly bool
}

// formatted reports whether -o or --jq asked for an output format (so a
// command prints through show instead of its own default text).
func (a *app) formatted() bool { return a.output != "" || a.jq != "" }

// refuseFormat is the usage error of -o or --jq on a command that
// streams without end (it has no one document to format).
func (a *app) refuseFormat(command string) error {
	if !a.formatted() {
		return nil
	}
	return usagef("%s streams without end, so -o and --jq do not apply: --json prints its ndjson lines", command)
}

// checkOutput validates -o and --jq before a command runs (so a bad
// format fails before a write, not after it).
func (a *app) checkOutput() error {
	if _, err := parseOutput(a.output); err != nil {
		return err
	}
	if a.jq == "" {
		return nil
	}
	if a.output != "" && a.output != outJSON {
		return usagef("--jq works on the JSON output: drop -o %s", a.output)
	}
	_, err := parseJQ(a.jq)
	return err
}

// show prints v in the format -o (or --jq) asked for; asJSON (a
// command's legacy --json flag) is -o json.
func (a *app) show(v view, asJSON bool) error {
	if a.jq != "" {
		code, err := parseJQ(a.jq)
		if err != nil {
			return err
		}
		return a.printJQ(code, v.value)
	}
	f, err := parseOutput(a.output)
	if err != nil {
		return err
	}
	if asJSON && f.kind == outDefault {
		f.kind = outJSON
	}
	switch f.kind {
	case outDefault, outWide:
		if v.table == nil || (v.wideOnly && f.kind == outDefault) {
			return a.printValue(v.value)
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		v.table(tw, f.kind == outWide)
		return tw.Flush()
	case outJSON:
		return a.printValue(v.value)
	case outYAML:
		return a.printYAML(v.value)
	case outName:
		return a.printNames(v)
	default:
		return a.printJSONPath(f.template, v.value)
	}
}

// encodeJSON encodes v as indented JSON without HTML escapes.
func encodeJSON(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode output: %w", err)
	}
	return unescapeHTML(buf.Bytes()), nil // raw members keep the server's escapes
}

// printValue writes v to stdout as indented JSON (no HTML escapes).
func (a *app) printValue(v any) error {
	b, err := encodeJSON(v, "  ")
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(b)
	return err
}

// printLine writes v to stdout as JSON on one line (no HTML escapes).
func (a *app) printLine(v any) error {
	b, err := encodeJSON(v, "")
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(b)
	return err
}

// printYAML writes v to stdout as YAML.
func (a *app) printYAML(v any) error {
	js, err := encodeJSON(v, "")
	if err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return fmt.Errorf("encode yaml: %w", err)
	}
	_, err = a.stdout.Write(y)
	return err
}

// printNames writes kind/name for each resource of v, one per line.
func (a *app) printNames(v view) error {
	names := v.names
	if names == nil {
		g, err := generic(v.value)
		if err != nil {
			return err
		}
		names = namesOf(g)
	}
	for _, n := range names {
		if v.kind != "" {
			n = v.kind + "/" + n
		}
		fmt.Fprintln(a.stdout, n)
	}
	return nil
}

// namesOf finds resource names in a decoded answer: an object's name, id
// or type member, or those of the items of its one list member.
func namesOf(g any) []string {
	switch x := g.(type) {
	case []any:
		var out []string
		for _, it := range x {
			out = append(out, namesOf(it)...)
		}
		return out
	case map[string]any:
		for _, k := range []string{"name", "id", "type"} {
			if s, ok := x[k].(string); ok {
				return []string{s}
			}
		}
		for _, m := range x {
			if l, ok := m.([]any); ok {
				return namesOf(l)
			}
		}
	}
	return nil
}

// generic returns v as decoded JSON (maps, slices, json.Number, ...).
func generic(v any) (any, error) {
	js, err := encodeJSON(v, "")
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("decode output: %w", err)
	}
	return g, nil
}

// printJSONPath writes the template's rendering of v.
func (a *app) printJSONPath(p *jsonPath, v any) error {
	g, err := generic(v)
	if err != nil {
		return err
	}
	out, err := p.render(g)
	if err != nil {
		return usagef("-o jsonpath: %v", err)
	}
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	_, err = io.WriteString(a.stdout, out)
	return err
}

// unescapeHTML undoes encoding/json's HTML escapes (\u003c, \u003e,
// \u0026) in a JSON document; they only ever occur inside strings, where
// the plain characters mean the same.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if i+5 < len(b) && b[i+1] == 'u' {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out = append(out, b[i], b[i+1]) // any other escape, kept whole
		i++
	}
	return out
}

// compact returns a JSON document on one line (or as is if it is not
// valid JSON), without HTML escapes.
func compact(raw []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return unescapeHTML(buf.Bytes())
}
