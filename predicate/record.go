package predicate

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Record is a compiled predicate over the variable `entity`: one record
// snapshot, shaped {type, id, version, properties, links} as triggers see
// it. It holds exactly when the expression evaluates to true; false, a
// non-bool result and every runtime error (a missing key, a type error,
// the cost limit) do not hold. It is safe for concurrent use.
type Record struct {
	src string
	prg cel.Program
	eqs []Equality
}

// Equality is a top-level conjunct of a record predicate of the form
// entity.properties.<Property> == <literal> (either side; a string index
// entity.properties["<Property>"] too). Value is the literal as decoded
// JSON would hold it: a string, a bool, or a number as float64.
//
// Because a record predicate holds only when every top-level conjunct is
// true, a record whose property is missing, or holds a value that CEL
// does not call equal to Value, cannot satisfy the predicate: callers may
// index predicates by their equalities. CEL equality between a JSON value
// and a literal agrees with the decoded Go values compared as strings,
// bools or float64 numbers (CEL compares int, uint and double
// numerically), and a null, list or object never equals a scalar.
type Equality struct {
	Property string
	Value    any
}

var recordEnv = mustEnv(cel.Variable("entity", cel.DynType))

// CompileRecord compiles and type-checks src, which must yield a bool (or
// dyn). Errors are bad_request naming field in details.field, with
// details.position {line, column} (1-based) of the first issue.
func CompileRecord(field, src string) (*Record, error) {
	checked, prg, err := compileBool(recordEnv, field, src)
	if err != nil {
		return nil, err
	}
	return &Record{src: src, prg: prg, eqs: equalities(checked.NativeRep().Expr())}, nil
}

// compileBool compiles and type-checks src in env for a definition field
// (a view filter, an access rule): it must be non-empty, within
// MaxSourceLen, yield a bool (or dyn) and pass the static cost check.
// Errors are bad_request naming field, with details.position of the first
// compile issue.
func compileBool(env *cel.Env, field, src string) (*cel.Ast, cel.Program, error) {
	if strings.TrimSpace(src) == "" {
		return nil, nil, fieldError(field, "expression is empty")
	}
	if len(src) > MaxSourceLen {
		return nil, nil, fieldError(field, "expression longer than %d bytes", MaxSourceLen)
	}
	checked, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, nil, issueError(field, iss)
	}
	if t := checked.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, nil, fieldError(field, "expression must yield a bool, not %s", t)
	}
	if _, err := staticCost(env, checked); err != nil {
		return nil, nil, fieldError(field, "%v", err).With("reason", "cost")
	}
	prg, err := env.Program(checked, programOptions()...)
	if err != nil {
		return nil, nil, fieldError(field, "%v", err)
	}
	return checked, prg, nil
}

// issueError is the bad_request of the first compile issue, with its
// position.
func issueError(field string, iss *cel.Issues) error {
	errs := iss.Errors()
	if len(errs) == 0 {
		return fieldError(field, "%v", iss.Err())
	}
	line, col := errs[0].Location.Line(), errs[0].Location.Column()+1
	return fieldError(field, "line %d, column %d: %s", line, col, strings.TrimPrefix(errs[0].Message, "ERROR: ")).
		With("position", map[string]int{"line": line, "column": col})
}

func fieldError(field, format string, args ...any) *problem.Error {
	return problem.New(problem.BadRequest, "%s: %s", field, fmt.Sprintf(format, args...)).With("field", field)
}

// String returns the expression's source.
func (p *Record) String() string { return p.src }

// Equalities returns the predicate's top-level equality conjuncts on
// properties, left to right.
func (p *Record) Equalities() []Equality { return p.eqs }

// Holds evaluates the predicate on a bound snapshot.
func (p *Record) Holds(b *Binding) bool {
	out, _, err := p.prg.Eval(b)
	return err == nil && out == types.True
}

// Binding is the CEL activation of one record snapshot. The record is
// converted on first use and kept, so every predicate judging the same
// snapshot shares the work. A Binding is used by one goroutine.
type Binding struct {
	rec *store.Record
	val ref.Val
}

var _ interpreter.Activation = (*Binding)(nil)

// Bind returns the activation of rec, which must not be nil.
func Bind(rec *store.Record) *Binding { return &Binding{rec: rec} }

// ResolveName implements interpreter.Activation.
func (b *Binding) ResolveName(name string) (any, bool) {
	if name != "entity" {
		return nil, false
	}
	if b.val == nil {
		b.val = recordVal(b.rec)
	}
	return b.val, true
}

// Parent implements interpreter.Activation.
func (b *Binding) Parent() interpreter.Activation { return nil }

// recordVal is the CEL value of a record; an error value when its
// properties are not JSON (no predicate holds on it).
func recordVal(r *store.Record) ref.Val {
	var props any = map[string]any{}
	if len(r.Properties) > 0 {
		if err := json.Unmarshal(r.Properties, &props); err != nil {
			return types.WrapErr(fmt.Errorf("entity properties: %w", err))
		}
	}
	links := make([]any, len(r.Links))
	for i, l := range r.Links {
		links[i] = map[string]any{"rel": l.Rel, "target": map[string]any{"type": l.Target.Type, "id": l.Target.ID}}
	}
	return types.DefaultTypeAdapter.NativeToValue(map[string]any{
		"type": r.Type, "id": r.ID, "version": r.Version, "properties": props, "links": links,
	})
}

// equalities returns the property equalities among the top-level
// conjuncts of e.
func equalities(e ast.Expr) []Equality {
	var out []Equality
	for _, c := range conjuncts(e, nil) {
		if eq, ok := equalityOf(c); ok {
			out = append(out, eq)
		}
	}
	return out
}

// conjuncts flattens nested && calls into their operands, left to right.
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

// equalityOf recognises entity.properties.<name> == <literal>.
func equalityOf(e ast.Expr) (Equality, bool) {
	if e.Kind() != ast.CallKind {
		return Equality{}, false
	}
	c := e.AsCall()
	if c.FunctionName() != operators.Equals || c.IsMemberFunction() || len(c.Args()) != 2 {
		return Equality{}, false
	}
	a, b := c.Args()[0], c.Args()[1]
	if a.Kind() == ast.LiteralKind {
		a, b = b, a
	}
	if b.Kind() != ast.LiteralKind {
		return Equality{}, false
	}
	prop, ok := propertyOf(a)
	if !ok {
		return Equality{}, false
	}
	v, ok := literalValue(b.AsLiteral())
	return Equality{Property: prop, Value: v}, ok
}

// propertyOf recognises entity.properties.<name> and
// entity.properties["<name>"].
func propertyOf(e ast.Expr) (string, bool) {
	var operand ast.Expr
	var name string
	switch e.Kind() {
	case ast.SelectKind:
		s := e.AsSelect()
		if s.IsTestOnly() {
			return "", false
		}
		operand, name = s.Operand(), s.FieldName()
	case ast.CallKind:
		c := e.AsCall()
		if c.FunctionName() != operators.Index || c.IsMemberFunction() || len(c.Args()) != 2 || c.Args()[1].Kind() != ast.LiteralKind {
			return "", false
		}
		key, ok := c.Args()[1].AsLiteral().(types.String)
		if !ok {
			return "", false
		}
		operand, name = c.Args()[0], string(key)
	default:
		return "", false
	}
	if operand.Kind() != ast.SelectKind || operand.AsSelect().IsTestOnly() || operand.AsSelect().FieldName() != "properties" {
		return "", false
	}
	root := operand.AsSelect().Operand()
	return name, root.Kind() == ast.IdentKind && root.AsIdent() == "entity"
}

// literalValue is a string, bool or number literal as decoded JSON holds
// it.
func literalValue(v ref.Val) (any, bool) {
	switch v := v.(type) {
	case types.String:
		return string(v), true
	case types.Bool:
		return bool(v), true
	case types.Int:
		return float64(v), true
	case types.Uint:
		return float64(v), true
	case types.Double:
		return float64(v), true
	}
	return nil, false
}
