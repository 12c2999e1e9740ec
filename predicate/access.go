package predicate

import (
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
// dyn) and pass the static cost check (as a view's CEL filter). Errors
// are bad_request naming field in details.field, with details.position
// {line, column} (1-based) of the first issue.
func CompileAccess(field, src string) (*Access, error) {
	_, prg, err := compileBool(accessEnv, field, src)
	if err != nil {
		return nil, err
	}
	return &Access{src: src, prg: prg}, nil
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
