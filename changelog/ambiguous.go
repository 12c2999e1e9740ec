package changelog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// ambiguousCommitError is a group transaction whose Commit failed after its
// commits were sent: the database may have committed them (the connection
// broke after COMMIT reached the server) or not.
type ambiguousCommitError struct {
	err     error
	space   string
	writeID int64
	first   int64 // seq of the group's first commit
	head    int64 // seq of its last
	results []WriteResult
	// unknown is set by resolve when the outcome could not be learned.
	unknown bool
}

// Error implements error.
func (e *ambiguousCommitError) Error() string { return e.err.Error() }

// Unwrap returns the Commit error.
func (e *ambiguousCommitError) Unwrap() error { return e.err }

// probeTuning says how many times, and how long apart at first, resolve
// asks the store whether an ambiguous commit landed before answering
// unavailable.
type probeTuning struct {
	attempts int
	backoff  time.Duration
}

// defaultProbe waits about 1.5 s in all for the store to answer.
var defaultProbe = probeTuning{attempts: 6, backoff: 50 * time.Millisecond}

// errOutcomeUnknown is the answer to every request of a group whose
// outcome could not be learned. Retrying with the same Idempotency-Key
// (mutation id) answers from the stored receipt if the write landed.
var errOutcomeUnknown = problem.New(problem.Unavailable,
	"the store could not confirm whether this write was committed; retry it (with the same Idempotency-Key, it is applied at most once)")

// resolve finds out whether an ambiguous group landed. Landed, it returns
// the group's results, which are what it committed; not landed, the
// Commit error (the caller retries); unknowable, errOutcomeUnknown with
// amb.unknown set (the caller must not retry).
func (l *Log) resolve(ctx context.Context, amb *ambiguousCommitError, stats *GroupStats) ([]WriteResult, int64, error) {
	landed, err := l.probe(ctx, amb)
	switch {
	case err != nil:
		amb.unknown = true
		return nil, 0, fmt.Errorf("%w (%w)", errOutcomeUnknown, err)
	case landed:
		stats.Commits = int(amb.head - amb.first + 1)
		return amb.results, amb.head, nil
	}
	return nil, 0, amb
}

// probe asks the store whether amb's first commit carries its write id,
// retrying with backoff while the store cannot answer.
func (l *Log) probe(ctx context.Context, amb *ambiguousCommitError) (bool, error) {
	wait := l.probing.backoff
	var err error
	for i := 0; i < l.probing.attempts; i++ {
		var landed bool
		landed, err = l.st.CommitLanded(ctx, amb.space, amb.first, amb.writeID)
		if err == nil {
			return landed, nil
		}
		if errors.Is(err, store.ErrNotFound) || i == l.probing.attempts-1 {
			break
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("probe commit %d: %w", amb.first, err)
		case <-time.After(wait):
		}
		wait *= 2
	}
	return false, fmt.Errorf("probe commit %d: %w", amb.first, err)
}

// RetryAfter is the Retry-After, in seconds, of an unavailable answer to
// a store outage or an ambiguous commit.
const RetryAfter = 1

// StoreUnavailable returns the unavailable problem that answers err when
// err says the store cannot be reached (store.ErrUnavailable), else nil.
// It is the one place a store outage becomes an answer: HTTP handlers
// and watch streams alike call it.
func StoreUnavailable(err error) *problem.Error {
	if !errors.Is(err, store.ErrUnavailable) {
		return nil
	}
	return problem.New(problem.Unavailable, "the store is unavailable; retry later")
}
