package store

import "context"

// CausedParams selects the commits caused by any of the rows Causes (their
// provenance causedBy is one of them), in seq order, at most Limit.
type CausedParams struct {
	Space  string
	Causes []int64
	Limit  int
}

// CausalStore reads causal chains downward: from a row to the rows its
// deliveries authored. Walking up needs no index (every commit names its
// cause); walking down does.
type CausalStore interface {
	// CommitsCausedBy returns whole commits (see CausedParams) with their
	// changes, receipt and provenance.
	CommitsCausedBy(ctx context.Context, p CausedParams) ([]Commit, error)
}
