package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PresenceChannel is the channel a listener notifies, with an empty
// payload, once it listens and holds the presence lock: a store whose
// commits stopped notifying because no other listener existed starts
// again.
const PresenceChannel = "eddy_listeners"

// presenceLockKey is the session-level shared advisory lock (the two-key
// form, so pg_locks shows it as classid, objid) every Listen connection
// holds while it listens. The server releases it when the connection
// ends, however it ends, so the holders are exactly the live listeners.
var presenceLockKey = [2]int32{0x65646479, 0x4c53544e} // "eddy", "LSTN"

// presenceInterval is how often a listener counts the other listeners
// (to go quiet once it is the last one); tests shrink it.
var presenceInterval = 5 * time.Second

const (
	// presenceHoldQ takes the presence lock and announces it. Both run in
	// the connect's implicit transaction, after the LISTENs: the notice
	// is sent at its commit, when this listener already hears the others'.
	presenceHoldQ = "SELECT pg_advisory_lock_shared(%d, %d); SELECT pg_notify('" + PresenceChannel + "', '')"
	// presenceCountQ counts the other holders of the presence lock in
	// this database.
	presenceCountQ = `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND classid = $1 AND objid = $2 AND objsubid = 2 AND granted AND pid <> pg_backend_pid()`
	// recheckQ tells every listener to re-check every head (an empty
	// payload on NotifyChannel).
	recheckQ = "SELECT pg_notify('" + NotifyChannel + "', '')"
)

// presence decides whether this store's commits NOTIFY their new head.
// A commit notifies unless the store's own listener is connected and
// found no other listener in the database: then nobody would hear it
// (this process learns of its own commits in memory). The protocol that
// keeps this safe:
//
//   - every listener LISTENs, then takes the shared presence lock and
//     notifies PresenceChannel, then counts the other holders; so of any
//     two listeners the later one counts the earlier, and the earlier
//     hears the later's notice;
//   - a quiet store that hears a notice (or loses its listener) turns
//     loud and owes every listener a re-check of every head, sent once
//     no commit that may have started quietly is in flight (by loud
//     itself, or by the last such commit as it ends), so a commit the
//     newcomer could not have heard is read by its re-check;
//   - a listener re-counts every presenceInterval and turns the store
//     quiet again once it is alone.
type presence struct {
	quiet   atomic.Bool  // commits skip the NOTIFY
	quietly atomic.Int64 // commits in flight that may have decided not to notify
	owed    atomic.Bool  // a re-check is due once quietly is 0

	mu     sync.Mutex // serializes transitions
	pool   *pgxpool.Pool
	logger *slog.Logger
}

// newPresence returns a loud presence whose re-check goes through pool.
func newPresence(pool *pgxpool.Pool) *presence {
	return &presence{pool: pool, logger: slog.Default().With("component", "postgres.presence")}
}

// enter is called by a commit before it builds its statements and
// reports whether it must notify; every commit calls leave once it
// committed or failed.
func (p *presence) enter() (notify bool) {
	p.quietly.Add(1)
	return !p.quiet.Load()
}

// leave ends a commit begun by enter; the last one to end while a
// re-check is owed sends it.
func (p *presence) leave(ctx context.Context) {
	if p.quietly.Add(-1) == 0 {
		p.settle(ctx)
	}
}

// settle sends the re-check owed, if any, once.
func (p *presence) settle(ctx context.Context) {
	if !p.owed.CompareAndSwap(true, false) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listenPingTimeout)
	defer cancel()
	if _, err := p.pool.Exec(ctx, recheckQ); err != nil {
		p.logger.Warn("could not ask listeners to re-check heads", "err", err)
	}
}

// loud makes commits notify again. If they were quiet, every listener
// is owed a re-check of every head (a listener that joined meanwhile did
// not hear them), sent now if no commit is in flight, else by the last
// one as it ends.
func (p *presence) loud(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.quiet.Load() {
		return
	}
	p.owed.Store(true)
	p.quiet.Store(false)
	if p.quietly.Load() == 0 {
		p.settle(ctx)
	}
}

// alone makes commits quiet: the caller, this store's connected
// listener, counted no other listener after hearing every notice sent
// before the count.
func (p *presence) alone() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.quiet.Store(true)
}

// holdPresence takes the presence lock on the listener connection conn
// and announces it.
func holdPresence(ctx context.Context, conn *pgx.Conn) error {
	q := fmt.Sprintf(presenceHoldQ, presenceLockKey[0], presenceLockKey[1])
	if _, err := conn.Exec(ctx, q); err != nil {
		return fmt.Errorf("hold presence: %w", err)
	}
	return nil
}

// countOthers returns how many other listeners hold the presence lock.
func countOthers(ctx context.Context, conn *pgx.Conn) (int, error) {
	var n int
	if err := conn.QueryRow(ctx, presenceCountQ, presenceLockKey[0], presenceLockKey[1]).Scan(&n); err != nil {
		return 0, fmt.Errorf("count listeners: %w", err)
	}
	return n, nil
}
