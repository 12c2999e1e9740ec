// Package predicate compiles CEL expressions over changelog rows: the
// `when` of watch streams and history pages. An expression is compiled and
// type-checked once, then evaluated per row with a cost limit. The same
// language judges rows for triggers, so the expression that fires a
// trigger can be used to watch or page the rows it matches.
package predicate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// MaxSourceLen bounds an expression's length in bytes.
const MaxSourceLen = 4096

// CostLimit bounds the runtime cost of one evaluation.
var CostLimit uint64 = 100_000

// ErrNoSuchKey marks an evaluation that read a key the row lacks; callers
// treat it as "does not match".
var ErrNoSuchKey = errors.New("no such key")

// Row is a compiled predicate over the variable `row`, the wire row.
type Row struct {
	src string
	prg cel.Program
}

var rowEnv = mustEnv(cel.Variable("row", cel.MapType(cel.StringType, cel.DynType)))

func mustEnv(opts ...cel.EnvOption) *cel.Env {
	env, err := cel.NewEnv(opts...)
	if err != nil {
		panic(fmt.Sprintf("predicate: build CEL environment: %v", err))
	}
	return env
}

// CompileRow compiles and type-checks src, which must yield a bool. Errors
// are bad_request naming the parameter param, with details.position
// {line, column} (1-based) of the first issue.
func CompileRow(param, src string) (*Row, error) {
	if len(src) > MaxSourceLen {
		return nil, problem.Param(param, "expression longer than %d bytes", MaxSourceLen)
	}
	ast, iss := rowEnv.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, compileError(param, iss)
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, problem.Param(param, "expression must yield a bool, not %s", t)
	}
	if field, kind, ok := rowFieldOf(ast); ok {
		return nil, problem.Param(param, "expression must yield a bool, not %s (row.%s)", kind, field)
	}
	if _, err := staticCost(rowEnv, ast); err != nil {
		return nil, problem.Param(param, "%v", err).With("reason", "cost")
	}
	prg, err := rowEnv.Program(ast, programOptions()...)
	if err != nil {
		return nil, problem.Param(param, "%v", err)
	}
	return &Row{src: src, prg: prg}, nil
}

// rowFields are the kinds of the wire row's fields; the checker sees
// each as dyn (row is a map), so CompileRow names them itself.
var rowFields = map[string]string{
	"seq": "int", "ts": "timestamp", "actor": "string", "op": "string",
	"entityId": "string", "type": "string", "payload": "map",
}

// rowFieldOf reports whether the whole expression is one field of row
// (row.op, row["seq"]): never a bool.
func rowFieldOf(checked *cel.Ast) (string, string, bool) {
	e := checked.NativeRep().Expr()
	var operand celast.Expr
	var name string
	switch e.Kind() {
	case celast.SelectKind:
		if e.AsSelect().IsTestOnly() {
			return "", "", false
		}
		operand, name = e.AsSelect().Operand(), e.AsSelect().FieldName()
	case celast.CallKind:
		c := e.AsCall()
		if c.FunctionName() != operators.Index || len(c.Args()) != 2 || c.Args()[1].Kind() != celast.LiteralKind {
			return "", "", false
		}
		key, ok := c.Args()[1].AsLiteral().(types.String)
		if !ok {
			return "", "", false
		}
		operand, name = c.Args()[0], string(key)
	default:
		return "", "", false
	}
	kind, known := rowFields[name]
	ok := known && operand.Kind() == celast.IdentKind && operand.AsIdent() == "row"
	return name, kind, ok
}

func compileError(param string, iss *cel.Issues) error {
	errs := iss.Errors()
	if len(errs) == 0 {
		return problem.Param(param, "%v", iss.Err())
	}
	e := errs[0]
	line, col := e.Location.Line(), e.Location.Column()+1
	msg := strings.TrimPrefix(e.Message, "ERROR: ")
	return problem.Param(param, "line %d, column %d: %s", line, col, msg).
		With("position", map[string]int{"line": line, "column": col})
}

// String returns the expression's source.
func (p *Row) String() string { return p.src }

// Match evaluates the predicate on r. A read of a missing key returns
// false with an error wrapping ErrNoSuchKey; other runtime errors (cost
// limit, type errors) return false and the error.
func (p *Row) Match(r *store.Row) (bool, error) {
	out, _, err := p.prg.Eval(map[string]any{"row": RowValue(r)})
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return false, fmt.Errorf("%w: %w", ErrNoSuchKey, err)
		}
		return false, fmt.Errorf("evaluate %q: %w", p.src, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("evaluate %q: result is %s, not bool", p.src, out.Type())
	}
	return b, nil
}

// Allow returns Match as a plain predicate: errors do not match.
func (p *Row) Allow(r *store.Row) bool {
	ok, _ := p.Match(r)
	return ok
}

// RowValue is the CEL value of a wire row: its JSON shape, with ts as a
// timestamp and payload decoded.
func RowValue(r *store.Row) map[string]any {
	var payload any = map[string]any{}
	if len(r.Payload) > 0 {
		_ = json.Unmarshal(r.Payload, &payload)
	}
	return map[string]any{
		"seq":      r.Seq,
		"ts":       r.TS,
		"actor":    r.Actor,
		"op":       r.Op,
		"entityId": r.EntityID,
		"type":     r.Type,
		"payload":  payload,
	}
}
