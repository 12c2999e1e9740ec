package triggers

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/store"
)

// MaxWhenLen bounds a `when` expression's length in bytes.
const MaxWhenLen = predicate.MaxSourceLen

// CostLimit bounds the runtime cost of one `when` evaluation. It is read
// when an expression is compiled.
var CostLimit uint64 = 100_000

// env declares the variables of a `when`: row (the wire row, shaped as
// predicate.RowValue builds it), entity and before (records or null);
// vars.go binds them.
var env = mustEnv(
	cel.Variable("row", cel.MapType(cel.StringType, cel.DynType)),
	cel.Variable("entity", cel.DynType),
	cel.Variable("before", cel.DynType),
)

func mustEnv(opts ...cel.EnvOption) *cel.Env {
	e, err := cel.NewEnv(opts...)
	if err != nil {
		panic(fmt.Sprintf("triggers: build CEL environment: %v", err))
	}
	return e
}

// Subject is what a trigger judges: a wire row, the entity after the change
// (nil after a delete and on engine rows) and before it (nil on
// creation). A Subject of SubjectOfRaw holds the commit's stored changes
// instead, decoded for Entity and Before only when a program reads one.
type Subject struct {
	Row    *store.Row
	Entity *store.Record
	Before *store.Record
	// raw, when set, is the commit whose primary change gives Entity and
	// Before on first use.
	raw *store.RawCommit
}

// Outcome is one evaluation's verdict: StanceMatched, StanceNotMatched
// (false, or a read of a missing key) or StanceError with Err.
type Outcome struct {
	Stance Stance
	Err    error
}

// Program is a compiled, type-checked `when`. It is safe for concurrent
// use.
type Program struct {
	src string
	prg cel.Program
	// bounded: costBound proves the runtime cost within the limit, so
	// the program runs without a cost tracker (see cost.go, index.go).
	bounded bool
	// bound is the most one evaluation can cost: costBound's proof when
	// bounded, else the limit the cost tracker enforces.
	bound  uint64
	guards []guard
}

// Compile compiles and type-checks src, which must yield a bool (or dyn,
// checked at run time), with the CostLimit in force now. Errors are
// bad_request naming field in details.field, with details.position
// {line, column} (1-based) of the first issue.
func Compile(field, src string) (*Program, error) {
	return compile(field, src, CostLimit)
}

func compile(field, src string, limit uint64) (*Program, error) {
	if len(src) > MaxWhenLen {
		return nil, fieldError(field, "expression longer than %d bytes", MaxWhenLen)
	}
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, compileError(field, iss)
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fieldError(field, "expression must yield a bool, not %s", t)
	}
	expr := ast.NativeRep().Expr()
	bound, finite := costBound(expr)
	p := &Program{src: src, bounded: finite && bound <= limit, bound: bound}
	opts := []cel.ProgramOption{}
	if !p.bounded {
		p.bound = limit
		opts = append(opts, cel.CostLimit(limit))
	}
	prg, err := env.Program(ast, opts...)
	if err != nil {
		return nil, fieldError(field, "%v", err)
	}
	p.prg = prg
	p.guards = findGuards(expr, p.bounded, limit)
	return p, nil
}

func compileError(field string, iss *cel.Issues) error {
	errs := iss.Errors()
	if len(errs) == 0 {
		return fieldError(field, "%v", iss.Err())
	}
	e := errs[0]
	line, col := e.Location.Line(), e.Location.Column()+1
	msg := strings.TrimPrefix(e.Message, "ERROR: ")
	return fieldError(field, "line %d, column %d: %s", line, col, msg).
		With("position", map[string]int{"line": line, "column": col})
}

// CostBound returns the most one evaluation of the program can cost in
// CEL cost units: the static bound when it is proven, else the cost
// limit it runs under.
func (p *Program) CostBound() uint64 { return p.bound }

// String returns the expression's source.
func (p *Program) String() string { return p.src }

// Eval judges in. Its error reports an Subject without a row; the
// expression's runtime errors, including reading a record that cannot be
// decoded (ErrBadInput), are an Outcome with StanceError.
func (p *Program) Eval(in Subject) (Outcome, error) {
	if in.Row == nil {
		return Outcome{}, fmt.Errorf("%w: no row", ErrBadInput)
	}
	return p.eval(newVars(in)), nil
}

// eval runs the program on a row's variables.
func (p *Program) eval(vars *vars) Outcome {
	out, _, err := p.prg.Eval(vars)
	if err != nil {
		if isMissingKey(err) {
			return Outcome{Stance: StanceNotMatched}
		}
		return Outcome{Stance: StanceError, Err: err}
	}
	switch out.Value() {
	case true:
		return Outcome{Stance: StanceMatched}
	case false:
		return Outcome{Stance: StanceNotMatched}
	}
	return Outcome{Stance: StanceError, Err: fmt.Errorf("result is %s, not bool", out.Type().TypeName())}
}

// isMissingKey reports a read of an absent map key or of a field of null,
// which CEL reports as "no such key: <name>".
func isMissingKey(err error) bool { return strings.HasPrefix(err.Error(), "no such key") }
