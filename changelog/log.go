package changelog

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/eddy-run/eddy/store"
)

// HistoryUnavailableError reports a read below a space's horizon: the rows
// it asks for were pruned. Horizon is the oldest resumable position.
type HistoryUnavailableError struct {
	Space     string
	Requested int64
	Horizon   int64
}

// Error implements error.
func (e *HistoryUnavailableError) Error() string {
	return fmt.Sprintf("history unavailable: space %s: position %d is below the horizon %d", e.Space, e.Requested, e.Horizon)
}

// Options tune a Log. The zero value is usable.
type Options struct {
	// Logger receives the log's operational messages (default
	// slog.Default()).
	Logger *slog.Logger
	// IdempotencyWindow is how long receipts are kept by mutation id
	// (default 24h).
	IdempotencyWindow time.Duration
	// ClientRetention is how long a push client idle since its last
	// admitted ordinal is kept (default DefaultClientRetention); past it
	// housekeeping forgets the client.
	ClientRetention time.Duration
	// MaxScan bounds the rows a filtered page scans (default 10,000).
	MaxScan int
	// MaxBatch bounds the requests one group commit takes (default 128).
	MaxBatch int
	// Linger bounds how long a group's leader waits for the writers the
	// recent groups answered to come back, so they share one transaction
	// (default DefaultLinger; negative: never wait). It waits only when
	// the recent groups held several requests, for as many as the largest
	// of them, and halves the wait after each one that timed out.
	Linger time.Duration
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// OnCommit, if set, is called after every committed write transaction
	// with the space and its new head. It must not block.
	OnCommit func(space string, head int64)
	// Observe, if set, is called after every group transaction, committed
	// or failed, with what it did (for metrics). It must not block.
	Observe func(GroupStats)
}

// GroupStats describes one group commit transaction, for Options.Observe.
type GroupStats struct {
	Space string
	// Requests is the number of write requests the group carried.
	Requests int
	// Commits is the number of commits it appended (0 when it failed).
	Commits int
	// Rejections is the number of rejected receipts it answered.
	Rejections int
	// Duration runs from the first WriteBegin to Commit returning.
	Duration time.Duration
	// Err is why the transaction failed; nil when it committed.
	Err error
}

// WriteRequest is one request's mutations, applied in order as
// consecutive commits; with Atomic, all or nothing. Its engine rows follow
// its mutations as further consecutive commits. A request needs at least
// one mutation or engine row.
type WriteRequest struct {
	Space     string
	Mutations []Mutation
	Atomic    bool
	// Provenance is the template every commit's provenance starts from
	// (actor, via, request id, trigger, delivery, cause and depth); the
	// mutation id is filled per mutation.
	Provenance store.Provenance
	// Engine are rows the engine appends after the mutations, in order;
	// with Atomic and a rejected mutation, none is appended.
	Engine []EngineRow
	// Effects, if set, runs inside the write transaction after every
	// commit of the group is appended, with this request's result. If it
	// returns an error the transaction rolls back, the request fails
	// alone with that error (wrapped, errors.Is works) and nothing of it
	// is written. It runs even when the request appended nothing (no-ops,
	// a rejected atomic batch). A transaction that fails and is retried
	// calls it again: only the call whose transaction commits counts.
	Effects func(ctx context.Context, tx store.WriteTx, res WriteResult) error
	// Push, if set, makes the request a client push (DESIGN.md section
	// 8b): Mutations[i] carries ordinal Push.Ordinals[i] and the mutation
	// id <client>:<ordinal>; the request may not be Atomic nor carry
	// Engine rows or Effects.
	Push *Push
}

// EngineRow is a row the engine appends itself: ops fire and park, which
// carry no entity changes. Its actor is Provenance.Actor.
type EngineRow struct {
	Op         string
	Type       string
	EntityID   string
	Payload    json.RawMessage
	Provenance store.Provenance
}

// WriteResult answers a WriteRequest: one receipt per mutation in order,
// the primary entity after each mutation (nil after a delete or a
// rejection), whether each created its entity, the seqs of the engine rows
// in order (empty when none was appended), and LastSeq: the seq of the
// last commit appended, or the head when none was.
type WriteResult struct {
	Receipts   []store.Receipt
	Entities   []*store.Record
	Created    []bool
	EngineSeqs []int64
	LastSeq    int64
	// Push answers a Push request (nil otherwise).
	Push *PushOutcome
}

// PullPage is one page of whole commits (see Log.Pull).
type PullPage struct {
	Commits    []store.Commit `json:"commits"`
	NextCursor int64          `json:"nextCursor"`
	HasMore    bool           `json:"hasMore"`
}

// Page is a page of wire rows. For a forward read, Cursor is the position
// to resume after; for history, the oldest seq consumed, to pass as the
// next before, and Exhausted says the walk reached the horizon.
type Page struct {
	Rows      []store.Row
	Cursor    int64
	Head      int64
	Exhausted bool
}

// ListParams select one page of a collection. Head pins the snapshot (0 =
// the current head); After is the last id of the previous page.
type ListParams struct {
	Space string
	Type  string
	After string
	Head  int64
	Limit int
	// Allow, if set, drops records the reader may not see.
	Allow func(*store.Record) bool
	// Known, when not nil, is the space as the caller read it for this
	// request (auth.Reader.Space): its head is the default snapshot and
	// judges Head, instead of reading the space again.
	Known *store.Space
}

// ListPage is one page of a collection as of Head. Next is the last id
// returned when more may follow, else "".
type ListPage struct {
	Items []store.Record
	Head  int64
	Next  string
}
