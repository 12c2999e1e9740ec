package triggers

import (
	"regexp"
	"strconv"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// A guard is a top-level conjunct of a `when` that the index can judge
// from one path value without running the program:
//
//	<path> == <string|int|uint|double|bool literal>   (either side)
//	<path> != null                                    (either side)
//
// where <path> is row, entity or before followed by field selections
// (`.name`) or string-keyed indexes (`["name"]`). See index.go for when
// skipping a trigger on a guard is exactly equivalent to evaluating it.
type guard struct {
	kind guardKind
	// path is the CEL source of the path; the index evaluates it alone.
	path string
	// key is the literal of a guardEq.
	key valueKey
	// first: the guard is the leftmost top-level conjunct, the first
	// thing the program evaluates.
	first bool
	// rank orders guards for hashing: entity and before properties
	// first, the wire row's own fields last.
	rank int
}

type guardKind uint8

const (
	guardEq guardKind = iota + 1
	guardNotNull
)

// valueKey is a literal or a path value as a map key, such that CEL
// `a == b` implies keyOf(a) == keyOf(b): strings by content, bools, and
// every number (int, uint, double) as its float64 value. Converting both
// sides to float64 keeps every pair CEL calls equal (CEL compares int
// with double through float64 and int with uint exactly); the converse
// need not hold, since a hashed candidate is still evaluated.
type valueKey struct {
	kind uint8
	s    string
	f    float64
}

const (
	keyString uint8 = iota + 1
	keyNumber
	keyBool
)

// keyOf returns the key of a string, bool or number; other values (null,
// maps, lists, timestamps, bytes) have none: CEL equality between them
// and a guard's literal is false.
func keyOf(v ref.Val) (valueKey, bool) {
	switch v := v.(type) {
	case types.String:
		return valueKey{kind: keyString, s: string(v)}, true
	case types.Bool:
		if v {
			return valueKey{kind: keyBool, f: 1}, true
		}
		return valueKey{kind: keyBool}, true
	case types.Int:
		return valueKey{kind: keyNumber, f: float64(v)}, true
	case types.Uint:
		return valueKey{kind: keyNumber, f: float64(v)}, true
	case types.Double:
		return valueKey{kind: keyNumber, f: float64(v)}, true
	}
	return valueKey{}, false
}

// findGuards returns the guards of a checked expression that the index
// may use: the leftmost conjunct always (if its own cost fits the limit),
// the others only when the whole expression's cost is bounded.
func findGuards(e ast.Expr, bounded bool, limit uint64) []guard {
	var out []guard
	for i, c := range conjuncts(e, nil) {
		if i > 0 && !bounded {
			break
		}
		g, ok := guardOf(c)
		if cost, finite := costBound(c); !ok || !finite || cost > limit {
			continue
		}
		g.first = i == 0
		out = append(out, g)
	}
	return out
}

// conjuncts flattens nested && calls into their operands, left to right:
// the order in which the interpreter evaluates them.
func conjuncts(e ast.Expr, out []ast.Expr) []ast.Expr {
	if e.Kind() == ast.CallKind {
		c := e.AsCall()
		if c.FunctionName() == operators.LogicalAnd && !c.IsMemberFunction() {
			for _, arg := range c.Args() {
				out = conjuncts(arg, out)
			}
			return out
		}
	}
	return append(out, e)
}

// guardOf recognises a guard.
func guardOf(e ast.Expr) (guard, bool) {
	if e.Kind() != ast.CallKind || e.AsCall().IsMemberFunction() || len(e.AsCall().Args()) != 2 {
		return guard{}, false
	}
	c := e.AsCall()
	p, lit, ok := pathAndLiteral(c.Args()[0], c.Args()[1])
	if !ok {
		return guard{}, false
	}
	g := guard{path: p.src, rank: p.rank}
	switch {
	case c.FunctionName() == operators.NotEquals && lit.Type() == types.NullType:
		g.kind = guardNotNull
	case c.FunctionName() == operators.Equals:
		k, ok := keyOf(lit)
		if !ok {
			return guard{}, false
		}
		g.kind, g.key = guardEq, k
	default:
		return guard{}, false
	}
	return g, true
}

func pathAndLiteral(a, b ast.Expr) (pathInfo, ref.Val, bool) {
	if a.Kind() == ast.LiteralKind {
		a, b = b, a
	}
	if b.Kind() != ast.LiteralKind {
		return pathInfo{}, nil, false
	}
	p, ok := pathOf(a)
	return p, b.AsLiteral(), ok
}

// pathInfo describes a path expression.
type pathInfo struct {
	src   string
	root  string
	first string // the first field after the root
	steps int
	rank  int
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// pathOf recognises row, entity or before followed by plain field
// selections or string-literal indexes.
func pathOf(e ast.Expr) (pathInfo, bool) {
	switch e.Kind() {
	case ast.IdentKind:
		switch name := e.AsIdent(); name {
		case "row", "entity", "before":
			return pathInfo{src: name, root: name, rank: rootRank(name, "")}, true
		}
	case ast.SelectKind:
		s := e.AsSelect()
		if s.IsTestOnly() || !identRE.MatchString(s.FieldName()) {
			return pathInfo{}, false
		}
		return extend(s.Operand(), s.FieldName(), "."+s.FieldName())
	case ast.CallKind:
		c := e.AsCall()
		if c.FunctionName() != operators.Index || c.IsMemberFunction() || len(c.Args()) != 2 ||
			c.Args()[1].Kind() != ast.LiteralKind {
			return pathInfo{}, false
		}
		key, ok := c.Args()[1].AsLiteral().(types.String)
		if !ok {
			return pathInfo{}, false
		}
		return extend(c.Args()[0], string(key), "["+strconv.Quote(string(key))+"]")
	}
	return pathInfo{}, false
}

func extend(operand ast.Expr, field, suffix string) (pathInfo, bool) {
	p, ok := pathOf(operand)
	if !ok {
		return pathInfo{}, false
	}
	if p.steps == 0 {
		p.first = field
	}
	p.src += suffix
	p.steps++
	p.rank = rootRank(p.root, p.first)
	return p, true
}

func rootRank(root, first string) int {
	switch {
	case root != "row" && first == "properties":
		return 3
	case root != "row" && first != "":
		return 2
	case root == "row" && first == "payload":
		return 1
	}
	return 0
}
