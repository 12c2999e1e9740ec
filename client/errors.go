package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Stream errors.
var (
	// ErrIdle ends a stream on which nothing, not even a heartbeat,
	// arrived for its idle timeout: the connection is presumed dead.
	ErrIdle = errors.New("client: no data from the server")
	// ErrStreamEnded is a stream the server ended without a terminal
	// frame (a dropped connection, a restarted proxy).
	ErrStreamEnded = errors.New("client: stream ended")
	// ErrFrameTooLong is an ndjson line longer than MaxFrameBytes; it
	// ends a watch.
	ErrFrameTooLong = errors.New("client: stream frame too long")
	// ErrBadFrame is a stream line that is not a frame; it ends a watch
	// (a server or proxy that sent one would send it again).
	ErrBadFrame = errors.New("client: bad stream frame")
	// ErrClosed is returned by a Watcher after Close.
	ErrClosed = errors.New("client: watch closed")
)

// Error is a problem object the server answered ({"error": {"code",
// "message", "details"}}), or the terminal {"error": ...} frame that
// ended a stream. Branch on Code (the stable codes of DESIGN.md section
// 5, such as "not_found" or "conflict"; IsCode does it through wrapping),
// and on Reason where a code has several causes (details.reason, such as
// "triggers_behind" or "causality_cap").
type Error struct {
	// Status is the HTTP status of the answer; 0 for a stream's terminal
	// frame (which arrives inside a 200 stream).
	Status int
	// Code is the problem code. An answer that was not a problem object
	// (a proxy's error page, say) has the code "http_<status>".
	Code string
	// Message is for people.
	Message string
	// Reason is details.reason when the server gave one.
	Reason string
	// Details are the machine-readable details, as decoded JSON.
	Details map[string]any
	// RetryAfter is the wait the answer's Retry-After header asked for
	// (0 when it had none).
	RetryAfter time.Duration
	// RequestID is the X-Request-Id of the answer: quote it when asking
	// an operator about a failure.
	RequestID string

	retryable bool // the answer carried a valid Retry-After
}

// Error implements error: "code: message".
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code
	}
	return e.Code + ": " + e.Message
}

// Detail returns details[key] and whether it was present.
func (e *Error) Detail(key string) (any, bool) {
	v, ok := e.Details[key]
	return v, ok
}

// DetailInt returns details[key] as an integer (JSON numbers decode as
// float64) and whether it was present and integral.
func (e *Error) DetailInt(key string) (int64, bool) {
	f, ok := e.Details[key].(float64)
	if !ok || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// Receipt returns the receipt a rejected write carries in
// details.receipt, and whether there was one.
func (e *Error) Receipt() (*store.Receipt, bool) {
	v, ok := e.Details["receipt"]
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var rc store.Receipt
	if err := json.Unmarshal(b, &rc); err != nil {
		return nil, false
	}
	return &rc, true
}

// CompactedError reports a position below the space's horizon: the rows
// after it were pruned, so nothing can resume from it. A consumer's one
// answer is to re-list what it tracks and continue from the fresh head.
// It wraps the server's *Error (code "compacted"), so IsCode(err,
// "compacted") and errors.As with *Error both work.
type CompactedError struct {
	// From is the position that was asked for (-1 when the call had no
	// single position).
	From int64
	// Horizon is the oldest resumable position the server reported
	// (details.horizon), -1 when it did not.
	Horizon int64
	// Err is the server's problem.
	Err *Error
}

// Error implements error.
func (e *CompactedError) Error() string {
	var b strings.Builder
	b.WriteString("compacted")
	if e.From >= 0 {
		fmt.Fprintf(&b, ": cannot resume from %d", e.From)
	}
	if e.Horizon >= 0 {
		fmt.Fprintf(&b, ": history starts after %d (the horizon)", e.Horizon)
	}
	b.WriteString("; re-list, then continue from the fresh head")
	return b.String()
}

// Unwrap returns the server's problem.
func (e *CompactedError) Unwrap() error { return e.Err }

// IsCode reports whether err is, or wraps, an *Error with code.
func IsCode(err error, code string) bool {
	return CodeOf(err) == code
}

// CodeOf returns the code of the first *Error in err's chain, or "" when
// there is none (a network failure, a cancelled context).
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// ReasonOf returns details.reason of the first *Error in err's chain, or
// "".
func ReasonOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// maxProblemBytes bounds how much of an error answer is read.
const maxProblemBytes = 1 << 20

// problemOf builds the *Error of a problem object (the body of an error
// answer, or a terminal frame's value); a body that is not one becomes
// "http_<status>" with the start of the body as its message.
func problemOf(status int, header http.Header, body []byte) *Error {
	var env struct {
		Error *problem.Error `json:"error"`
	}
	e := &Error{Status: status}
	if err := json.Unmarshal(body, &env); err == nil && env.Error != nil && env.Error.Code != "" {
		e.Code, e.Message, e.Details = env.Error.Code, env.Error.Message, env.Error.Details
		e.Reason, _ = e.Details["reason"].(string)
	} else {
		e.Code, e.Message = fmt.Sprintf("http_%d", status), bodyExcerpt(status, body)
	}
	if header != nil {
		e.RetryAfter, e.retryable = functions.ParseRetryAfter(header.Get("Retry-After"), time.Now())
		e.RequestID = header.Get("X-Request-Id")
	}
	return e
}

// bodyExcerpt is the first 200 bytes of a non-problem error body, or the
// status text.
func bodyExcerpt(status int, body []byte) string {
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return msg
}

// classify turns a compacted problem into a *CompactedError for position
// from; other problems are returned as they are.
func classify(e *Error, from int64) error {
	if e.Code != problem.Compacted {
		return e
	}
	ce := &CompactedError{From: from, Horizon: -1, Err: e}
	if h, ok := e.DetailInt("horizon"); ok {
		ce.Horizon = h
	}
	return ce
}
