package views

import (
	"errors"
	"fmt"

	"github.com/eddy-run/eddy/problem"
)

// Reason is why a client must reset a view: the details.reason of a 409
// reset_required answer.
type Reason string

// The reset reasons.
const (
	// ViewChanged: the view's definition (its filter version, filter,
	// values, types or fields) is not the one the cursor was issued for.
	ViewChanged Reason = "view_changed"
	// SchemaChanged: the definition of a type the view reads changed.
	SchemaChanged Reason = "schema_changed"
	// EpochChanged: the space's epoch was rotated; its history no longer
	// addresses the same past.
	EpochChanged Reason = "epoch_changed"
	// TokenUnknown: a bootstrap token that was never issued for this
	// view: malformed, tampered, or another space's or view's.
	TokenUnknown Reason = "bootstrap_token_unknown"
	// SessionExpired: a frozen bootstrap session that was issued, then
	// timed out or was evicted; the retry came too late.
	SessionExpired Reason = "bootstrap_session_expired"
	// CursorAhead: a position beyond the source log's head.
	CursorAhead Reason = "cursor_ahead"
	// HistoryPruned: a position below the retention horizon.
	HistoryPruned Reason = "history_pruned"
)

// Reasons lists every reset reason.
var Reasons = []Reason{ViewChanged, SchemaChanged, EpochChanged, TokenUnknown, SessionExpired, CursorAhead, HistoryPruned}

// resetProblem is the 409 reset_required answer for reason.
func resetProblem(reason Reason, format string, args ...any) *problem.Error {
	return problem.New(problem.ResetRequired, "%s: %s", reason, fmt.Sprintf(format, args...)).With("reason", string(reason))
}

// ResetReason returns the reason of a reset_required error, or "".
func ResetReason(err error) Reason {
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != problem.ResetRequired {
		return ""
	}
	r, _ := pe.Details["reason"].(string)
	return Reason(r)
}
