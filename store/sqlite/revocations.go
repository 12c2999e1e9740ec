package sqlite

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// revocationsSuffix names the file next to the database that mirrors
// the token generation: "<database>-revocations".
const revocationsSuffix = "-revocations"

// revocations answers TokenGeneration from memory. Every process that
// opens the database maps one 8-byte counter in the file
// "<database>-revocations". A revocation raises the counter above the
// stored generation while it holds the write lock, before it commits,
// and stores the raised value as the generation. So while the counter
// equals a generation this process read from the database, no
// revocation has begun since, in any process, and that generation is
// current; when they differ (a revocation in flight, one that failed
// after raising the counter, or a counter behind the database) the
// database is read.
type revocations struct {
	// mu guards the mapping: every access to counter holds it for
	// reading, and close unmaps under it, so a request still running when
	// the store closes reads the database (and fails) instead of touching
	// unmapped memory.
	mu      sync.RWMutex
	closed  bool
	counter *int64       // the mapped counter
	unmap   func() error // releases the mapping and the file, once
	// confirmed is the last generation read from the database while
	// the counter equalled it; -1 before the first.
	confirmed atomic.Int64
}

// openRevocations maps the counter of the database at abs; nil (every
// TokenGeneration reads the database) where memory mapping is
// unsupported.
func openRevocations(abs string) (*revocations, error) {
	counter, unmap, err := mapCounter(abs + revocationsSuffix)
	if err != nil || counter == nil {
		return nil, err
	}
	r := &revocations{counter: counter, unmap: unmap}
	r.confirmed.Store(-1)
	return r, nil
}

// close releases the mapping; r may be nil. Closing again is a no-op.
func (r *revocations) close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return r.unmap()
}

// load returns the counter, and whether it is a generation confirmed
// against the database (then it is the current generation).
func (r *revocations) load() (int64, bool) {
	if r == nil {
		return 0, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return 0, false
	}
	v := atomic.LoadInt64(r.counter)
	return v, v == r.confirmed.Load()
}

// observe records that the database held generation g: if the counter
// equals it after the read, g is current until the counter moves. A
// counter behind the database (a recreated file) is raised to g.
func (r *revocations) observe(g int64) {
	if r == nil {
		return
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.closed && r.raise(g) == g {
		r.confirmed.Store(g)
	}
}

// raise sets the counter to at least g and returns its value; the caller
// holds mu for reading and has seen it open.
func (r *revocations) raise(g int64) int64 {
	for {
		cur := atomic.LoadInt64(r.counter)
		if cur >= g {
			return cur
		}
		if atomic.CompareAndSwapInt64(r.counter, cur, g) {
			return g
		}
	}
}

// advance stores the generation of a revocation in tx, which holds the
// write lock: the counter first moves past both itself and the stored
// generation (so every process's confirmed generation is stale before
// the revocation commits), then the generation takes its value.
func (r *revocations) advance(ctx context.Context, tx *connTx) error {
	if r != nil {
		r.mu.RLock()
		defer r.mu.RUnlock()
	}
	if r == nil || r.closed {
		_, err := tx.ExecContext(ctx, `UPDATE token_generation SET generation = generation + 1 WHERE id = 1`)
		return err
	}
	var g int64
	if err := tx.QueryRowContext(ctx, `SELECT generation FROM token_generation WHERE id = 1`).Scan(&g); err != nil {
		return fmt.Errorf("read generation: %w", err)
	}
	next := atomic.AddInt64(r.counter, 1)
	if next <= g {
		next = r.raise(g + 1)
	}
	_, err := tx.ExecContext(ctx, `UPDATE token_generation SET generation = ? WHERE id = 1`, next)
	return err
}
