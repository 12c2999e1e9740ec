package functions

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// Limits of expr functions. They are variables so tests and embedders can
// tune them; change them before compiling or running anything.
var (
	// MaxNodes bounds the AST nodes of a program, checked at compile time.
	MaxNodes uint = 2000
	// MemoryBudget bounds what one run allocates in expr's accounting:
	// every array and map element built, every range and every closure
	// iteration counts one unit.
	MemoryBudget uint = 1_000_000
	// MaxActions bounds the actions of one run (and of one webhook answer).
	MaxActions = 100
	// RunTimeout bounds a run whose context has no deadline.
	RunTimeout = time.Second
)

// Internal names of the deadline check the compiler inserts into every
// closure. A dot cannot appear in an identifier, so user code cannot name
// them.
const (
	tickFunc = "eddy.tick"
	ctxVar   = "eddy.ctx"
)

// maxNesting bounds how deeply lists of actions may nest in a result.
const maxNesting = 32

// Input is what one run of an expr function sees.
type Input struct {
	// Row is the wire row the delivery is for.
	Row store.Row
	// Entity and Before are the after and before snapshots (nil when the
	// entity did not exist).
	Entity, Before *store.Record
	// Trigger is the trigger's name.
	Trigger string
	// Now is the delivery's clock (time.Now if zero).
	Now time.Time
}

// ExprProgram is a compiled expr function. It is immutable and safe for
// concurrent runs.
type ExprProgram struct {
	src string
	prg *vm.Program
}

// compileEnv declares the variables of the environment and their types;
// unknown identifiers are compile errors.
var compileEnv = map[string]any{
	"row":     map[string]any{},
	"entity":  map[string]any{},
	"before":  map[string]any{},
	"now":     "",
	"trigger": "",
	ctxVar:    context.Background(),
}

// exprOptions are the options of every compilation, built once.
func exprOptions() []expr.Option {
	return []expr.Option{
		expr.Env(compileEnv),
		expr.MaxNodes(MaxNodes),
		// now is a variable here; the builtin now() would read the clock.
		expr.DisableBuiltin("now"),
		expr.Patch(deadlineCheck{}),
		expr.Function(tickFunc, tick, new(func(context.Context) any)),
		expr.Function("put", builtinPut, new(func(string, string, map[string]any) any)),
		expr.Function("patch", builtinPatch, new(func(string, string, map[string]any) any)),
		expr.Function("delete", builtinDelete, new(func(string, string) any)),
		expr.Function("link", builtinLink(changelog.OpLink), new(func(string, string, string, string, string) any)),
		expr.Function("unlink", builtinLink(changelog.OpUnlink), new(func(string, string, string, string, string) any)),
	}
}

// CompileExpr compiles code once, when a function is saved. Errors are
// bad_request with details.field "code" and details.position {line,
// column} (1-based) of the first problem: syntax, an unknown identifier,
// wrong argument types for a builtin, or more than MaxNodes nodes.
func CompileExpr(code string) (*ExprProgram, error) {
	if len(code) > MaxCodeLen {
		return nil, fieldError("code", "longer than %d bytes", MaxCodeLen)
	}
	prg, err := expr.Compile(code, exprOptions()...)
	if err != nil {
		return nil, compileError(err)
	}
	return &ExprProgram{src: code, prg: prg}, nil
}

func compileError(err error) error {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return fieldError("code", "%v", err)
	}
	line, col := fe.Line, fe.Column+1
	return fieldError("code", "line %d, column %d: %s", line, col, strings.TrimSpace(fe.Message)).
		With("position", map[string]int{"line": line, "column": col})
}

// String returns the program's source.
func (p *ExprProgram) String() string { return p.src }

// Run evaluates the program on in and returns its actions as validated
// mutations (no MutationID set), in the order the program listed them. A
// result of nil or an empty list means no actions; nils inside lists are
// skipped and nested lists are flattened.
//
// Errors: *EvalError for a failure inside the program (at its position;
// it wraps a *problem.Error when a builtin got an invalid argument,
// ErrBudgetExceeded, or the context's error when the deadline passed),
// ErrInvalidResult, ErrTooManyActions. Given the same input a run fails
// the same way, except for deadlines; errors.Is(err, context.Canceled)
// means the caller gave up. Run does not check the function's declared
// writes; see Function.RunExpr and CheckWrites.
func (p *ExprProgram) Run(ctx context.Context, in Input) ([]changelog.Mutation, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, RunTimeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	env, err := runEnv(ctx, in)
	if err != nil {
		return nil, err
	}
	machine := vm.VM{MemoryBudget: MemoryBudget}
	out, err := machine.Run(p.prg, env)
	if err != nil {
		return nil, evalError(err)
	}
	return collect(out)
}

func runEnv(ctx context.Context, in Input) (map[string]any, error) {
	row, err := rowValue(in.Row)
	if err != nil {
		return nil, err
	}
	entity, err := recordValue(in.Entity)
	if err != nil {
		return nil, fmt.Errorf("entity: %w", err)
	}
	before, err := recordValue(in.Before)
	if err != nil {
		return nil, fmt.Errorf("before: %w", err)
	}
	now := in.Now
	if now.IsZero() {
		now = time.Now()
	}
	return map[string]any{
		"row": row, "entity": entity, "before": before,
		"now": formatTime(now), "trigger": in.Trigger, ctxVar: ctx,
	}, nil
}

func evalError(err error) error {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return &EvalError{Line: 1, Column: 1, Message: err.Error(), Err: err}
	}
	e := &EvalError{Line: fe.Line, Column: fe.Column + 1, Message: fe.Message, Err: fe.Unwrap()}
	if e.Err == nil && strings.Contains(fe.Message, "memory budget exceeded") {
		e.Err = ErrBudgetExceeded
	}
	return e
}

// collect flattens a program's result into mutations.
func collect(out any) ([]changelog.Mutation, error) {
	var ms []changelog.Mutation
	if err := appendActions(&ms, out, 0); err != nil {
		return nil, err
	}
	return ms, nil
}

func appendActions(ms *[]changelog.Mutation, v any, depth int) error {
	switch v := v.(type) {
	case nil:
		return nil
	case *action:
		if len(*ms) >= MaxActions {
			return fmt.Errorf("%w: more than %d", ErrTooManyActions, MaxActions)
		}
		*ms = append(*ms, v.m)
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return fmt.Errorf("%w: want nil, an action or a list of actions, not %s", ErrInvalidResult, typeName(v))
	}
	if depth >= maxNesting {
		return fmt.Errorf("%w: lists nested deeper than %d", ErrInvalidResult, maxNesting)
	}
	for i := range rv.Len() {
		if err := appendActions(ms, rv.Index(i).Interface(), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// typeName names a value's type in expr's words.
func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a bool"
	case int, int64, float64:
		return "a number"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}

// deadlineCheck is an AST patch that makes every closure body first call
// the tick builtin with the run's context, so a loop stops at the deadline.
// The sequence keeps the body's type, so type checking is unchanged.
type deadlineCheck struct{}

// Visit implements ast.Visitor.
func (deadlineCheck) Visit(n *ast.Node) {
	p, ok := (*n).(*ast.PredicateNode)
	if !ok {
		return
	}
	loc := p.Node.Location()
	ctx := &ast.IdentifierNode{Value: ctxVar}
	ctx.SetLocation(loc)
	call := &ast.CallNode{Callee: &ast.IdentifierNode{Value: tickFunc}, Arguments: []ast.Node{ctx}}
	call.Callee.SetLocation(loc)
	call.SetLocation(loc)
	seq := &ast.SequenceNode{Nodes: []ast.Node{call, p.Node}}
	seq.SetLocation(loc)
	p.Node = seq
}

// tick fails once the run's context is done.
func tick(args ...any) (any, error) {
	if ctx, ok := args[0].(context.Context); ok {
		return nil, ctx.Err()
	}
	return nil, nil
}
