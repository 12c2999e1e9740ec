package triggers

import (
	"math"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// costBound returns an upper bound of the runtime cost cel-go's cost
// tracker can charge for evaluating e, whatever the input, and false
// when the cost depends on the input's sizes (comprehensions, string
// traversals of unknown length).
//
// cel-go's own static estimate is not used: it charges a select on a dyn
// value less than the runtime does, so it is not an upper bound for
// expressions over row, entity and before. This bound follows the
// runtime cost table (interpreter/runtimecost.go) instead, generously:
// every node adds slack on top of its own charge.
func costBound(e ast.Expr) (uint64, bool) {
	const slack = 2
	switch e.Kind() {
	case ast.LiteralKind:
		return slack, true
	case ast.IdentKind:
		return 1 + slack, true
	case ast.SelectKind:
		c, ok := costBound(e.AsSelect().Operand())
		return add(c, 1+slack), ok
	case ast.CallKind:
		return callBound(e.AsCall())
	case ast.ListKind:
		return sumBound(100+slack, e.AsList().Elements())
	case ast.MapKind:
		var exprs []ast.Expr
		for _, entry := range e.AsMap().Entries() {
			exprs = append(exprs, entry.AsMapEntry().Key(), entry.AsMapEntry().Value())
		}
		return sumBound(100+slack, exprs)
	}
	// Comprehensions and anything else: unbounded.
	return 0, false
}

// callBound is the bound of a call: its operands plus the call's charge.
func callBound(c ast.CallExpr) (uint64, bool) {
	args := c.Args()
	if c.IsMemberFunction() {
		args = append([]ast.Expr{c.Target()}, args...)
	}
	own, ok := callCharge(c.FunctionName(), args)
	if !ok {
		return 0, false
	}
	return sumBound(own+2, args)
}

// callCharge is the runtime charge of a call by function name: 1 for the
// constant-time functions, a size-dependent charge that a literal
// operand bounds for comparisons, prefix tests and list membership, and
// unbounded for traversals of input strings.
func callCharge(fn string, args []ast.Expr) (uint64, bool) {
	switch fn {
	case operators.LogicalAnd, operators.LogicalOr, operators.Conditional:
		return 0, true
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals,
		operators.Greater, operators.GreaterEquals:
		// ceil(min(size(a), size(b)) / 10): bounded by either literal.
		for _, a := range args {
			if n, ok := literalSize(a); ok {
				return 1 + n/10, true
			}
		}
		return 0, false
	case "startsWith", "endsWith":
		if n, ok := literalSize(args[len(args)-1]); ok {
			return 1 + n/10, true
		}
		return 0, false
	case operators.In:
		if args[1].Kind() == ast.ListKind {
			return 1 + uint64(args[1].AsList().Size()), true
		}
		return 0, false
	case operators.Add, "contains", "matches", "string", "bytes":
		return 0, false
	}
	return 1, true
}

// literalSize is the size cel-go charges for a literal operand: the
// length of a string or bytes (bytes bound runes), 1 for a scalar.
func literalSize(e ast.Expr) (uint64, bool) {
	if e.Kind() != ast.LiteralKind {
		return 0, false
	}
	switch v := e.AsLiteral().(type) {
	case types.String:
		return uint64(len(v)), true
	case types.Bytes:
		return uint64(len(v)), true
	}
	return 1, true
}

func sumBound(base uint64, exprs []ast.Expr) (uint64, bool) {
	total := base
	for _, x := range exprs {
		c, ok := costBound(x)
		if !ok {
			return 0, false
		}
		total = add(total, c)
	}
	return total, true
}

func add(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
