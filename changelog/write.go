package changelog

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// groupTimeout bounds one group transaction; it does not depend on any one
// caller's context.
var groupTimeout = 30 * time.Second

// Write applies a request's mutations through the space's group committer:
// consecutive commits, each with its own receipt; with Atomic, all or
// nothing. Its engine rows follow, and its Effects run in the same
// transaction. Bad mutations are bad_request and nothing is applied; a bad
// engine row is a plain error.
func (l *Log) Write(ctx context.Context, req WriteRequest) (WriteResult, error) {
	l.life.RLock()
	defer l.life.RUnlock()
	if l.closed {
		return WriteResult{}, problem.New(problem.Unavailable, "the log is shutting down")
	}
	if len(req.Mutations) == 0 && len(req.Engine) == 0 {
		return WriteResult{}, problem.Param("mutations", "at least one mutation is required")
	}
	// The mutations are the caller's: prepare copies.
	req.Mutations = slices.Clone(req.Mutations)
	for i := range req.Mutations {
		if err := ValidateMutation(&req.Mutations[i]); err != nil {
			return WriteResult{}, withIndex(err, i)
		}
		req.Mutations[i].prepare()
	}
	if err := validateEngine(req.Engine); err != nil {
		return WriteResult{}, err
	}
	if req.Push != nil {
		if err := checkPush(&req); err != nil {
			return WriteResult{}, err
		}
	}
	p := &pending{ctx: ctx, req: req, done: make(chan struct{}), lead: make(chan struct{})}
	l.submit(l.committerFor(req.Space), p)
	return p.res, p.err
}

func withIndex(err error, i int) error {
	var pe *problem.Error
	if errors.As(err, &pe) {
		return pe.With("index", i)
	}
	return err
}

// runGroup runs a group of requests in one transaction. If the
// transaction fails and the group holds several requests, each is retried
// alone so a poisoned request fails by itself. A Commit that failed
// ambiguously is resolved first (see resolve): a group that landed is
// answered from what it committed, one that did not is retried, and one
// whose outcome cannot be learned is answered unavailable, never retried.
//
// The group runs with the InCommit hook (hooked); when the hook's writes
// failed the transaction, it runs again without it.
func (l *Log) runGroup(group []*pending) { l.runGroupTry(group, 0, true) }

func (l *Log) runGroupTry(group []*pending, attempt int, hooked bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(group[0].ctx), groupTimeout)
	defer cancel()
	stats := GroupStats{Space: group[0].req.Space, Requests: len(group)}
	start := time.Now()
	results, head, err := l.commitGroup(ctx, group, &stats, hooked)
	if ice := (*inCommitError)(nil); hooked && errors.As(err, &ice) {
		l.runGroupTry(group, attempt, false)
		return
	}
	var amb *ambiguousCommitError
	retry := err != nil
	if errors.As(err, &amb) {
		results, head, err = l.resolve(ctx, amb, &stats)
		retry = err != nil && !amb.unknown
	}
	l.observe(stats, start, results, err)
	switch {
	case retry && len(group) > 1:
		for _, p := range group {
			l.runGroupTry([]*pending{p}, attempt+1, hooked)
		}
		return
	case retry && amb != nil && attempt < 2:
		// Proven not to have landed: the connection broke, not the request.
		l.runGroupTry(group, attempt+1, hooked)
		return
	}
	for i, p := range group {
		if err != nil {
			p.err = err
		} else {
			p.res = results[i]
		}
		close(p.done)
	}
	if err == nil && l.opts.OnCommit != nil && head > 0 {
		l.opts.OnCommit(group[0].req.Space, head)
	}
}

// observe hands the stats of one group transaction to Options.Observe.
func (l *Log) observe(stats GroupStats, start time.Time, results []WriteResult, err error) {
	if l.opts.Observe == nil {
		return
	}
	stats.Duration = time.Since(start)
	stats.Err = err
	for _, res := range results {
		for _, r := range res.Receipts {
			if r.Status == store.ReceiptRejected {
				stats.Rejections++
			}
		}
	}
	l.opts.Observe(stats)
}

// commitGroup applies every request of a group in one write transaction.
// It returns the results in order and the new head (0 if nothing was
// appended). When this process's last commit to the space predicts the
// group's reads, the transaction starts optimistically (one round trip on
// PostgreSQL); a stale prediction falls back to reading under the lock.
// It counts the commits it appends in stats.
func (l *Log) commitGroup(ctx context.Context, group []*pending, stats *GroupStats, hooked bool) ([]WriteResult, int64, error) {
	space := group[0].req.Space
	params := beginParams(space, group, l.now().Add(-l.opts.IdempotencyWindow))
	params.WriteID = newWriteID()
	if tx, schemas := l.beginOptimistic(ctx, params, group); tx != nil {
		results, head, err := l.commitTx(ctx, tx, schemas, group, stats, params.WriteID, hooked)
		if !errors.Is(err, store.ErrStale) {
			return results, head, err
		}
		l.cache.stale(space)
	}
	params.WriteID = newWriteID()
	tx, schemas, err := l.beginWithSchema(ctx, space, params)
	if err != nil {
		return nil, 0, err
	}
	return l.commitTx(ctx, tx, schemas, group, stats, params.WriteID, hooked)
}

// beginOptimistic opens a transaction predicted from the write cache, or
// returns nil when there is no usable prediction.
func (l *Log) beginOptimistic(ctx context.Context, p store.WriteBeginParams, group []*pending) (store.WriteTx, map[string]*TypeDef) {
	exp := l.cache.expect(p.Space, group)
	if exp == nil {
		return nil, nil
	}
	schemas, version, ok := l.schemas.cached(p.Space)
	if !ok || version != exp.SchemaVersion {
		return nil, nil
	}
	p.Expect = exp
	tx, err := l.st.WriteBegin(ctx, p)
	if err != nil {
		return nil, nil
	}
	if tx.Space().SchemaVersion != version {
		tx.Rollback(ctx) //nolint:errcheck // abandoned before any write
		return nil, nil
	}
	return tx, schemas
}

// groupRows is the most commits a group can append: one per mutation
// and per engine row.
func groupRows(group []*pending) int {
	n := 0
	for _, p := range group {
		n += len(p.req.Mutations) + len(p.req.Engine)
	}
	return n
}

// commitTx applies the group in tx, runs its effects and (hooked) the
// InCommit hook and commits it, remembering the state it leaves for the
// next group's prediction. A failed Commit of a group that appended
// commits is an *ambiguousCommitError: they may have landed; one the hook's
// writes failed is an *inCommitError.
func (l *Log) commitTx(ctx context.Context, tx store.WriteTx, schemas map[string]*TypeDef, group []*pending, stats *GroupStats, writeID int64, hooked bool) ([]WriteResult, int64, error) {
	space := group[0].req.Space
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	g := newGroupState(tx, schemas, l.now())
	g.commits = make([]pendingCommit, 0, groupRows(group))
	results := make([]WriteResult, len(group))
	for i, p := range group {
		results[i] = g.apply(p.req)
	}
	if err := prepare(ctx, g, group, results); err != nil {
		l.cache.forget(space)
		return nil, 0, err
	}
	finish, judged, err := l.runInCommit(ctx, g, space, hooked)
	if err != nil {
		finish(err)
		l.cache.forget(space)
		return nil, 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		finish(err)
		l.cache.forget(space)
		if judged && commitFailedByHook(err) {
			return nil, 0, &inCommitError{err: fmt.Errorf("commit: %w", err)}
		}
		if errors.Is(err, store.ErrStale) || g.head == tx.Space().Head {
			// Nothing written, or nothing to find: a group that appended
			// no commit changed no entity and no head, and its receipts
			// are answered alike when retried.
			return nil, 0, fmt.Errorf("commit: %w", err)
		}
		return nil, 0, &ambiguousCommitError{err: fmt.Errorf("commit: %w", err), space: space,
			writeID: writeID, first: tx.Space().Head + 1, head: g.head, results: results}
	}
	finish(nil)
	l.cache.remember(space, g.head, tx.Space().SchemaVersion, g.records)
	stats.Commits = int(g.head - tx.Space().Head)
	if g.head == tx.Space().Head {
		return results, 0, nil
	}
	return results, g.head, nil
}

// prepare writes the group's commits and receipts and runs every
// request's Effects in request order; the caller commits.
func prepare(ctx context.Context, g *groupState, group []*pending, results []WriteResult) error {
	if err := g.flush(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for i, p := range group {
		if p.req.Effects == nil {
			continue
		}
		if err := p.req.Effects(ctx, g.tx, results[i]); err != nil {
			return fmt.Errorf("write effects: %w", err)
		}
	}
	return nil
}

// beginWithSchema opens the write transaction with the space's compiled
// type definitions at the locked schema version. Definitions are loaded
// outside the transaction (holding no lock and no second connection):
// when the cached version turns out stale under the lock, the transaction
// is abandoned, the cache refreshed, and the lock taken again.
func (l *Log) beginWithSchema(ctx context.Context, space string, p store.WriteBeginParams) (store.WriteTx, map[string]*TypeDef, error) {
	for attempt := 0; ; attempt++ {
		cached, version, ok := l.schemas.cached(space)
		tx, err := l.st.WriteBegin(ctx, p)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil, spaceNotFound(space)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("begin write: %w", err)
		}
		if ok && version == tx.Space().SchemaVersion {
			return tx, cached, nil
		}
		if err := tx.Rollback(ctx); err != nil {
			return nil, nil, fmt.Errorf("begin write: %w", err)
		}
		if attempt == 3 {
			return nil, nil, fmt.Errorf("begin write: type definitions of %s keep changing", space)
		}
		if err := l.schemas.load(ctx, l.st, space); err != nil {
			return nil, nil, err
		}
	}
}

func beginParams(space string, group []*pending, since time.Time) store.WriteBeginParams {
	p := store.WriteBeginParams{Space: space, ReceiptsSince: since}
	seen := make(map[store.EntityKey]bool)
	for _, pd := range group {
		for i := range pd.req.Mutations {
			m := &pd.req.Mutations[i]
			for _, k := range m.Keys() {
				if !seen[k] {
					seen[k] = true
					p.Entities = append(p.Entities, k)
				}
			}
			if m.MutationID != "" {
				p.MutationIDs = append(p.MutationIDs, m.MutationID)
			}
		}
		if pd.req.Push != nil && !slices.Contains(p.Clients, pd.req.Push.ClientID) {
			p.Clients = append(p.Clients, pd.req.Push.ClientID)
		}
	}
	return p
}

// newWriteID returns a random non-zero write transaction id.
func newWriteID() int64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("crypto/rand: %v", err))
		}
		if id := int64(binary.LittleEndian.Uint64(b[:]) >> 1); id != 0 {
			return id
		}
	}
}

// newEpoch returns a fresh random epoch string.
func newEpoch() string {
	var b [10]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}
