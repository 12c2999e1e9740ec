package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// jsonPath is a parsed -o jsonpath template: kubectl's subset of JSONPath.
// Text outside braces is printed as is; inside braces go a path
// ({.items[*].name}, {.a['b-c'][0]}, {.*}), a quoted string ({"\n"}),
// or {range PATH} ... {end}, which renders its body once per result.
// The results of one path are separated by spaces; strings print bare,
// other values as JSON.
type jsonPath struct {
	nodes []jpNode
}

// jpNode is one piece of a template.
type jpNode struct {
	text   string   // literal text (when not isPath)
	isPath bool     // print the results of path
	path   []jpStep // the path of a print or a range
	isRng  bool     // a range over path
	body   []jpNode // a range's body
}

// jpStep is one step of a path: a member name, an index, or every
// element (wild).
type jpStep struct {
	name  string
	index int
	isIdx bool
	wild  bool
}

var errJPSyntax = errors.New("syntax")

// parseJSONPath parses a template; one without braces is taken as a
// single path ("{" + t + "}").
func parseJSONPath(t string) (*jsonPath, error) {
	if !strings.Contains(t, "{") {
		t = "{" + t + "}"
	}
	nodes, rest, err := parseJPNodes(t, false)
	if err != nil {
		return nil, err
	}
	if rest != "" {
		return nil, fmt.Errorf("%w: unexpected {end}", errJPSyntax)
	}
	return &jsonPath{nodes: nodes}, nil
}

// parseJPNodes parses nodes until the end, or until {end} when inRange.
func parseJPNodes(t string, inRange bool) ([]jpNode, string, error) {
	var nodes []jpNode
	for t != "" {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			nodes = append(nodes, jpNode{text: t})
			break
		}
		if i > 0 {
			nodes = append(nodes, jpNode{text: t[:i]})
		}
		expr, rest, err := braced(t[i:])
		if err != nil {
			return nil, "", err
		}
		t = rest
		switch {
		case expr == "end":
			if !inRange {
				return nil, "", fmt.Errorf("%w: {end} without {range}", errJPSyntax)
			}
			return nodes, "", nil
		case strings.HasPrefix(expr, "range "):
			path, err := parseJPPath(strings.TrimSpace(strings.TrimPrefix(expr, "range ")))
			if err != nil {
				return nil, "", err
			}
			body, after, err := parseJPNodes(t, true)
			if err != nil {
				return nil, "", err
			}
			nodes = append(nodes, jpNode{isRng: true, path: path, body: body})
			t = after
		case strings.HasPrefix(expr, `"`):
			s, err := strconv.Unquote(expr)
			if err != nil {
				return nil, "", fmt.Errorf("%w: string %s", errJPSyntax, expr)
			}
			nodes = append(nodes, jpNode{text: s})
		default:
			path, err := parseJPPath(expr)
			if err != nil {
				return nil, "", err
			}
			nodes = append(nodes, jpNode{isPath: true, path: path})
		}
	}
	if inRange {
		return nil, "", fmt.Errorf("%w: {range} without {end}", errJPSyntax)
	}
	return nodes, "", nil
}

// braced splits "{expr}rest", honouring quoted strings inside.
func braced(t string) (expr, rest string, err error) {
	inStr := false
	for i := 1; i < len(t); i++ {
		switch c := t[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case c == '}' && !inStr:
			return strings.TrimSpace(t[1:i]), t[i+1:], nil
		}
	}
	return "", "", fmt.Errorf("%w: unclosed {", errJPSyntax)
}

// parseJPPath parses a path such as .items[*].name or $.a['b'][0].
func parseJPPath(p string) ([]jpStep, error) {
	p = strings.TrimPrefix(strings.TrimPrefix(p, "$"), "@")
	var steps []jpStep
	for p != "" {
		switch {
		case p == ".":
			p = ""
		case strings.HasPrefix(p, ".*"):
			steps, p = append(steps, jpStep{wild: true}), p[2:]
		case p[0] == '.':
			end := strings.IndexAny(p[1:], ".[")
			if end < 0 {
				end = len(p) - 1
			}
			name := p[1 : end+1]
			if name == "" {
				return nil, fmt.Errorf("%w: empty name in %q", errJPSyntax, p)
			}
			steps, p = append(steps, jpStep{name: name}), p[end+1:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return nil, fmt.Errorf("%w: unclosed [ in %q", errJPSyntax, p)
			}
			st, err := parseJPIndex(p[1:end])
			if err != nil {
				return nil, err
			}
			steps, p = append(steps, st), p[end+1:]
		default:
			return nil, fmt.Errorf("%w: %q: a path starts with '.'", errJPSyntax, p)
		}
	}
	return steps, nil
}

// parseJPIndex parses the inside of [...]: *, a number or a quoted name.
func parseJPIndex(s string) (jpStep, error) {
	s = strings.TrimSpace(s)
	if s == "*" {
		return jpStep{wild: true}, nil
	}
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return jpStep{name: s[1 : len(s)-1]}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return jpStep{}, fmt.Errorf("%w: index [%s]", errJPSyntax, s)
	}
	return jpStep{index: n, isIdx: true}, nil
}

// render renders the template over v.
func (p *jsonPath) render(v any) (string, error) {
	var b strings.Builder
	if err := renderJP(&b, p.nodes, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

func renderJP(b *strings.Builder, nodes []jpNode, v any) error {
	for _, n := range nodes {
		switch {
		case n.isRng:
			for _, it := range evalJP(n.path, v) {
				if err := renderJP(b, n.body, it); err != nil {
					return err
				}
			}
		case n.isPath:
			for i, r := range evalJP(n.path, v) {
				if i > 0 {
					b.WriteByte(' ')
				}
				s, err := jpString(r)
				if err != nil {
					return err
				}
				b.WriteString(s)
			}
		default:
			b.WriteString(n.text)
		}
	}
	return nil
}

// evalJP returns the values path selects from v.
func evalJP(path []jpStep, v any) []any {
	cur := []any{v}
	for _, st := range path {
		var next []any
		for _, c := range cur {
			next = append(next, stepJP(st, c)...)
		}
		cur = next
	}
	return cur
}

func stepJP(st jpStep, v any) []any {
	switch x := v.(type) {
	case map[string]any:
		if st.wild {
			out := make([]any, 0, len(x))
			for _, k := range slices.Sorted(maps.Keys(x)) {
				out = append(out, x[k])
			}
			return out
		}
		if m, ok := x[st.name]; ok && !st.isIdx {
			return []any{m}
		}
	case []any:
		if st.wild {
			return x
		}
		if st.isIdx {
			i := st.index
			if i < 0 {
				i += len(x)
			}
			if i >= 0 && i < len(x) {
				return []any{x[i]}
			}
		}
	}
	return nil
}

// jpString prints one result: a string bare, anything else as JSON.
func jpString(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
