package functions

import (
	"errors"
	"fmt"

	"github.com/eddy-run/eddy/problem"
)

// Sentinel errors; callers branch on them with errors.Is.
var (
	// ErrInvalidResult reports an expr program that yielded something
	// other than nil, an action or a list of actions.
	ErrInvalidResult = errors.New("invalid function result")
	// ErrTooManyActions reports a run or a webhook answer with more than
	// MaxActions actions.
	ErrTooManyActions = errors.New("too many actions")
	// ErrUndeclaredWrite reports an action on a type the function does not
	// declare in its writes.
	ErrUndeclaredWrite = errors.New("write to an undeclared type")
	// ErrBudgetExceeded reports an expr run that went over MemoryBudget.
	ErrBudgetExceeded = errors.New("memory budget exceeded")
	// ErrInvalidResponse reports a 2xx webhook answer whose actions cannot
	// be used.
	ErrInvalidResponse = errors.New("invalid webhook response")
	// ErrInvalidSecret reports a signing secret that is not "whsec_"
	// followed by a base64 key.
	ErrInvalidSecret = errors.New("invalid webhook secret")
	// ErrMissingHeader reports a request without one of the Standard
	// Webhooks headers.
	ErrMissingHeader = errors.New("missing webhook header")
	// ErrTimestamp reports a webhook-timestamp that is malformed or outside
	// the tolerance.
	ErrTimestamp = errors.New("webhook timestamp out of tolerance")
	// ErrSignature reports that no signature matched.
	ErrSignature = errors.New("no matching webhook signature")
)

// EvalError is a failure while an expr program ran, at a position of its
// source (1-based line and column). Err, when set, is the cause: a
// validation *problem.Error of an action, ErrBudgetExceeded, or the run
// context's error.
type EvalError struct {
	Line    int
	Column  int
	Message string
	Err     error
}

// Error implements error.
func (e *EvalError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
}

// Unwrap returns the cause.
func (e *EvalError) Unwrap() error { return e.Err }

// fieldError is a bad_request naming the offending field in details.field.
func fieldError(field, format string, args ...any) *problem.Error {
	return problem.New(problem.BadRequest, "%s: %s", field, fmt.Sprintf(format, args...)).With("field", field)
}
