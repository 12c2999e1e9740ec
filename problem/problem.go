// Package problem is eddy's one catalogue of error codes. Domain packages
// return *Error values with a stable Code; the HTTP layer renders them as
// the problem object {"error": {"code", "message", "details"}} with the
// status the code maps to. It imports nothing of eddy's.
package problem

import (
	"errors"
	"fmt"
	"net/http"
)

// Codes, each with one HTTP status (see Status).
const (
	BadRequest         = "bad_request"
	Unauthorized       = "unauthorized"
	Forbidden          = "forbidden"
	NotFound           = "not_found"
	Conflict           = "conflict"
	ResetRequired      = "reset_required"
	Compacted          = "compacted"
	PreconditionFailed = "precondition_failed"
	PayloadTooLarge    = "payload_too_large"
	Unprocessable      = "unprocessable"
	RateLimited        = "rate_limited"
	Internal           = "internal"
	Unavailable        = "unavailable"
	// MutationGap is a push whose ordinal skips the next one the client
	// must send (details.expected, details.got).
	MutationGap = "mutation_gap"
	// CursorInvalid and CursorExpired refuse a journal cursor (DESIGN
	// section 9): issued to another user, application or space, or
	// damaged; or past its cursorExpiresAt.
	CursorInvalid = "cursor_invalid"
	CursorExpired = "cursor_expired"
)

var statuses = map[string]int{
	BadRequest:         http.StatusBadRequest,
	Unauthorized:       http.StatusUnauthorized,
	Forbidden:          http.StatusForbidden,
	NotFound:           http.StatusNotFound,
	Conflict:           http.StatusConflict,
	ResetRequired:      http.StatusConflict,
	Compacted:          http.StatusGone,
	PreconditionFailed: http.StatusPreconditionFailed,
	PayloadTooLarge:    http.StatusRequestEntityTooLarge,
	Unprocessable:      http.StatusUnprocessableEntity,
	RateLimited:        http.StatusTooManyRequests,
	Internal:           http.StatusInternalServerError,
	Unavailable:        http.StatusServiceUnavailable,
	MutationGap:        http.StatusConflict,
	CursorInvalid:      http.StatusConflict,
	CursorExpired:      http.StatusConflict,
}

// Status returns the HTTP status of a code (500 for an unknown code).
func Status(code string) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is an error with a stable code, a message for people and optional
// machine-readable details.
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Error implements error.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// New returns an *Error with a formatted message.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// With returns a copy of e carrying one more detail.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		c.Details[k] = v
	}
	c.Details[key] = value
	return &c
}

// Param returns a bad_request naming the offending parameter in
// details.parameter.
func Param(name, format string, args ...any) *Error {
	return New(BadRequest, "%s: %s", name, fmt.Sprintf(format, args...)).With("parameter", name)
}

// CodeOf returns the code of the first *Error in err's chain, or "" if
// there is none.
func CodeOf(err error) string {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}
