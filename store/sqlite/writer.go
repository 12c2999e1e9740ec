package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// writer owns the write connection: the one connection of the write pool,
// taken once and held for the store's life, a lock that admits one holder
// at a time, and the statements prepared on that connection.
//
// Transactions on it are explicit: BEGIN IMMEDIATE, COMMIT and ROLLBACK
// are statements prepared once like the others, and the statements of a
// WriteTx and of the trigger writes run with a context that cannot be
// cancelled (stmtContext). database/sql's Tx
// would instead arm a goroutine per transaction and one per query to
// watch its context, and modernc.org/sqlite would prepare and finalize
// BEGIN and COMMIT each time; on a one-put commit those were about a
// tenth of the write path's CPU.
type writer struct {
	db *sql.DB // the write pool, of one connection

	// busy is the connection's busy timeout: the longest BEGIN waits for a
	// lock held by another process.
	busy time.Duration

	// sem holds a token while a holder uses conn; taking it is the
	// process-wide write lock.
	sem chan struct{}

	// closed is set by close; the holder's release then closes conn.
	closed atomic.Bool

	// The fields below are guarded by sem.
	conn   *sql.Conn            // nil until first use, and after discard
	stmts  map[string]*sql.Stmt // prepared on conn
	broken bool                 // conn reported itself unusable
}

// Statements every explicit transaction runs.
const (
	sqlBegin    = `BEGIN IMMEDIATE`
	sqlCommit   = `COMMIT`
	sqlRollback = `ROLLBACK`
)

// errWriterClosed reports a write after Close.
var errWriterClosed = fmt.Errorf("store closed: %w", sql.ErrConnDone)

func newWriter(db *sql.DB, busy time.Duration) *writer {
	return &writer{db: db, busy: busy, sem: make(chan struct{}, 1)}
}

// acquire waits for the write connection (or ctx) and returns holding it;
// release gives it back.
func (w *writer) acquire(ctx context.Context) error {
	select {
	case w.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if w.closed.Load() {
		<-w.sem
		return errWriterClosed
	}
	if w.conn == nil {
		conn, err := w.db.Conn(ctx)
		if err != nil {
			<-w.sem
			return err
		}
		w.conn = conn
	}
	return nil
}

// release gives the write connection back, first replacing it if it broke
// and closing it if the store closed meanwhile.
func (w *writer) release() {
	if w.broken || w.closed.Load() {
		w.discard()
	}
	<-w.sem
}

// note marks the connection broken when err says so: the next release
// closes it and the next acquire opens another.
func (w *writer) note(err error) error {
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
		w.broken = true
	}
	return err
}

// discard closes the connection and its statements; a broken one is not
// returned to the pool.
func (w *writer) discard() {
	for _, st := range w.stmts {
		_ = st.Close()
	}
	w.stmts = nil
	if w.conn != nil {
		if w.broken {
			_ = w.conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		_ = w.conn.Close()
	}
	w.conn, w.broken = nil, false
}

// close ends the writer: at once if nobody holds the connection, else when
// its holder releases it. Later acquires fail.
func (w *writer) close() {
	w.closed.Store(true)
	select {
	case w.sem <- struct{}{}:
		w.discard()
		<-w.sem
	default: // the holder's release closes conn
	}
}

// stmt returns query prepared on the held connection. The write
// statements are a fixed set, so every one stays prepared.
func (w *writer) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := w.stmts[query]; ok {
		return st, nil
	}
	st, err := w.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, w.note(err)
	}
	if w.stmts == nil {
		w.stmts = make(map[string]*sql.Stmt, 64)
	}
	w.stmts[query] = st
	return st, nil
}

// run executes one prepared statement on the held connection.
func (w *writer) run(ctx context.Context, query string, args ...any) error {
	_, err := w.execHeld(ctx, query, args...)
	return err
}

// execHeld is run, returning the statement's result.
func (w *writer) execHeld(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := w.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	res, err := st.ExecContext(ctx, args...)
	return res, w.note(err)
}

// exec runs one prepared statement on its own (autocommit) on the write
// connection, taking it for that long.
func (w *writer) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := w.acquire(ctx); err != nil {
		return nil, err
	}
	defer w.release()
	return w.execHeld(ctx, query, args...)
}

// begin takes the write connection and opens a transaction on it. Only
// BEGIN's wait for a lock held by another process follows ctx.
func (w *writer) begin(ctx context.Context) error { return w.beginLocking(ctx, ctx) }

// beginFor is begin for a commit: ctx bounds the wait for the write
// connection, and the wait for another process's lock only when its
// deadline comes before the busy timeout ends that wait anyway. A BEGIN
// run with a context the driver can see end arms a watcher goroutine
// and a progress handler for the statement; a commit's context (the
// changelog's group, never cancelled before its transaction begins)
// needs neither, and they cost about 15 µs of CPU per one-writer
// commit. A cancelled caller is still refused after BEGIN, before its
// first statement (stmtContext).
func (w *writer) beginFor(ctx context.Context) error {
	lock := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok && time.Until(d) < w.busy {
		lock = ctx
	}
	return w.beginLocking(ctx, lock)
}

// beginLocking takes the write connection, waiting as long as ctx allows,
// and runs BEGIN IMMEDIATE with lock.
func (w *writer) beginLocking(ctx, lock context.Context) error {
	if err := w.acquire(ctx); err != nil {
		return err
	}
	if err := w.run(lock, sqlBegin); err != nil {
		w.release()
		return err
	}
	return nil
}

// commit commits the open transaction, keeping the connection; a COMMIT
// that fails is followed by a ROLLBACK, so the connection never keeps a
// transaction open for its next holder.
func (w *writer) commit() error {
	if err := w.run(context.Background(), sqlCommit); err != nil {
		_ = w.abort()
		return err
	}
	return nil
}

// abort rolls back whatever transaction is open. SQLite may have rolled
// it back already (after an I/O error, say), which is no error here; a
// ROLLBACK that fails otherwise leaves the connection suspect, so it is
// replaced.
func (w *writer) abort() error {
	err := w.run(context.Background(), sqlRollback)
	if err == nil || strings.Contains(err.Error(), "no transaction is active") {
		return nil
	}
	w.broken = true
	return fmt.Errorf("rollback: %w", err)
}

// connTx is a store-level write transaction on the held write connection:
// the statements of one call (a definition put, a token revoke, a trigger
// advance), run by Store.writeTx. It is also the stmter of the trigger
// SQL.
type connTx struct {
	w *writer
}

func (tx *connTx) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	return tx.w.stmt(ctx, query)
}

// ExecContext runs a statement that is not kept prepared.
func (tx *connTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := tx.w.conn.ExecContext(ctx, query, args...)
	return res, tx.w.note(err)
}

// QueryContext runs a query that is not kept prepared.
func (tx *connTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	rows, err := tx.w.conn.QueryContext(ctx, query, args...)
	return rows, tx.w.note(err)
}

// QueryRowContext runs a single-row query that is not kept prepared.
func (tx *connTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return tx.w.conn.QueryRowContext(ctx, query, args...)
}
