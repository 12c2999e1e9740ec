package predicate

import (
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"

	"github.com/eddy-run/eddy/store"
)

// Access is a compiled access rule: a CEL expression over `entity` (one
// record snapshot, shaped as for CompileRecord) and `user` (the reading
// principal's user, a string, "" for a token without one). It allows a
// read exactly when it evaluates to true; false and every runtime error
// (a missing key, a type error, the cost limit) deny. It is safe for
// concurrent use. The decision itself belongs to package auth; this type
// only compiles and evaluates the expression.
type Access struct {
	src string
	prg cel.Program
}

var accessEnv = mustEnv(cel.Variable("entity", cel.DynType), cel.Variable("user", cel.StringType))

// CompileAccess compiles and type-checks src, which must yield a bool (or
// dyn). Errors are bad_request naming field in details.field, with
// details.position {line, column} (1-based) of the first issue.
func CompileAccess(field, src string) (*Access, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fieldError(field, "expression is empty")
	}
	if len(src) > MaxSourceLen {
		return nil, fieldError(field, "expression longer than %d bytes", MaxSourceLen)
	}
	checked, iss := accessEnv.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, issueError(field, iss)
	}
	if t := checked.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
		return nil, fieldError(field, "expression must yield a bool, not %s", t)
	}
	prg, err := accessEnv.Program(checked, cel.CostLimit(CostLimit))
	if err != nil {
		return nil, fieldError(field, "%v", err)
	}
	return &Access{src: src, prg: prg}, nil
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

// String returns the expression's source.
func (a *Access) String() string { return a.src }

// Allows evaluates the rule on a bound snapshot for user.
func (a *Access) Allows(b *Binding, user string) bool {
	out, _, err := a.prg.Eval(&userBinding{Binding: b, user: user})
	return err == nil && out == types.True
}

// AllowsRecord is Allows on rec, which must not be nil.
func (a *Access) AllowsRecord(rec *store.Record, user string) bool {
	return a.Allows(Bind(rec), user)
}

// userBinding adds `user` to a record binding.
type userBinding struct {
	*Binding
	user string
}

var _ interpreter.Activation = (*userBinding)(nil)

// ResolveName implements interpreter.Activation.
func (u *userBinding) ResolveName(name string) (any, bool) {
	if name == "user" {
		return u.user, true
	}
	return u.Binding.ResolveName(name)
}
