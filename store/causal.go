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

// RootCount is the causal budget counter of one root write: the
// delivery-authored rows its chain holds (engine rows do not count),
// whether a budget park row was written for it, and the greatest seq
// counted (housekeeping keeps the counter while its chain still writes
// above the horizon).
type RootCount struct {
	Root    int64
	Rows    int64
	Parked  bool
	LastSeq int64
}

// RootCountTx reads and updates causal budget counters inside a write
// transaction.
type RootCountTx interface {
	// RootCountAdd adds each count to its root's counter in the
	// transaction's space, creating it: Rows are added, Parked is or-ed,
	// LastSeq is kept at the greatest. One statement per root.
	RootCountAdd(ctx context.Context, counts []RootCount) error
	// RootCounts returns the counters of the named roots of the
	// transaction's space as this transaction sees them (its own
	// RootCountAdd calls included), read in one statement; a root with no
	// counter is absent.
	RootCounts(ctx context.Context, roots []int64) (map[int64]RootCount, error)
}

// RootCountStore reads causal budget counters.
type RootCountStore interface {
	// RootCounts returns the counters of the named roots of space; a root
	// with no counter has caused nothing and is absent.
	RootCounts(ctx context.Context, space string, roots []int64) (map[int64]RootCount, error)
}
