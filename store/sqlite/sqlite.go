package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/eddy-run/eddy/store"
)

var _ store.Store = (*Store)(nil)

// Options tune Open. The zero value gives the documented defaults.
type Options struct {
	// Synchronous is the PRAGMA synchronous level of the write connection:
	// "FULL" (default; an acknowledged commit survives power loss),
	// "NORMAL" (durable across process crashes only) or "EXTRA".
	Synchronous string
	// BusyTimeout bounds how long a connection waits for a lock held by
	// another process (default 10s).
	BusyTimeout time.Duration
	// ReadConns is the size of the read pool (default max(4, NumCPU)).
	ReadConns int
}

func (o Options) withDefaults() Options {
	if o.Synchronous == "" {
		o.Synchronous = "FULL"
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	if o.ReadConns <= 0 {
		o.ReadConns = max(4, runtime.NumCPU())
	}
	return o
}

// Store is the SQLite driver. Every method is safe for concurrent use.
type Store struct {
	// w has exactly one connection, which wr holds: it is the
	// process-wide write lock.
	w  *sql.DB
	wr *writer
	// r is the pool of read-only connections.
	r *sql.DB

	// ckpt runs the WAL checkpoints the write connection does not.
	ckpt *checkpointer

	rstmts stmtCache
	// memos are the space rows the write connection's last commits left
	// (spacememo.go).
	memos spaceMemos
	// sync is the write connection's PRAGMA synchronous level.
	sync string
	// revs mirrors the token generation in memory; nil where memory
	// mapping is unsupported.
	revs *revocations
}

// Open opens (creating it if needed, but not its directory) the database
// file at path with the default Options. It does not migrate; call
// Migrate.
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenOptions(ctx, path, Options{})
}

// OpenOptions is Open with explicit options.
func OpenOptions(ctx context.Context, path string, o Options) (*Store, error) {
	o = o.withDefaults()
	switch o.Synchronous {
	case "FULL", "NORMAL", "EXTRA":
	default:
		return nil, fmt.Errorf("sqlite: open: bad synchronous level %q", o.Synchronous)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	syncData()
	if err := ownerOnly(abs); err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	busy := strconv.FormatInt(o.BusyTimeout.Milliseconds(), 10)
	w, err := openDB(ctx, dsn(abs, false, busy, o.Synchronous), 1)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open writer: %w", err)
	}
	r, err := openDB(ctx, dsn(abs, true, busy, o.Synchronous), o.ReadConns)
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open readers: %w", err)
	}
	revs, err := openRevocations(abs)
	if err != nil {
		_ = errors.Join(w.Close(), r.Close())
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	ckpt, err := startCheckpointer(ctx, dsn(abs, false, busy, o.Synchronous))
	if err != nil {
		_ = errors.Join(w.Close(), r.Close(), revs.close())
		return nil, fmt.Errorf("sqlite: open checkpointer: %w", err)
	}
	return &Store{w: w, wr: newWriter(w, o.BusyTimeout), r: r, revs: revs, ckpt: ckpt, sync: o.Synchronous}, nil
}

// syncDataOnce switches SQLite to fdatasync once per process.
var syncDataOnce sync.Once

// syncData makes SQLite sync with fdatasync(2) instead of fsync(2) in
// this process, where the platform has it (Linux, the BSDs, illumos), as
// SQLite's own builds for those platforms do: the data and the size of
// the file reach the disk as before, and a commit no longer waits for
// the file system journal to write the WAL's new modification time. The
// switch is process-wide; where fdatasync is unavailable it stays off.
func syncData() {
	syncDataOnce.Do(func() { _, _ = msqlite.Fdatasync(true) })
}

// ownerOnly creates the database file at abs with mode 0600 if it is
// missing and takes any other permission away from it and its -wal and
// -shm files. SQLite creates the -wal and -shm files with the database
// file's mode, so they are 0600 too.
func ownerOnly(abs string) error {
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, p := range []string{abs, abs + "-wal", abs + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// dsn builds a modernc URI for the file at abs. The writer converts the
// file to WAL, opens its transactions with BEGIN IMMEDIATE and leaves
// checkpoints to the checkpointer (checkpoint.go); readers are query-only.
func dsn(abs string, readOnly bool, busyMillis, sync string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+busyMillis+")")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous("+sync+")")
		q.Add("_pragma", "cache_size(-16000)")
		q.Add("_pragma", "wal_autocheckpoint(0)")
		q.Set("_txlock", "immediate")
	}
	q.Add("_pragma", "foreign_keys(0)")
	u := url.URL{Scheme: "file", OmitHost: true, Path: abs, RawQuery: q.Encode()}
	return u.String()
}

func openDB(ctx context.Context, dsn string, conns int) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// Close stops the checkpointer and closes the connection pools and the
// revocation counter. An open WriteTx is rolled back.
func (s *Store) Close() error {
	s.wr.close()
	s.rstmts.close()
	return errors.Join(s.ckpt.close(), s.w.Close(), s.r.Close(), s.revs.close())
}

// stmtCache prepares each query once per pool; database/sql then prepares
// it lazily once per connection and reuses it.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// maxCachedStmts bounds the cache; dynamic row filters have few shapes.
const maxCachedStmts = 512

func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	if st := c.lookup(query); st != nil {
		return st, nil
	}
	// Prepare without holding mu: it may wait for a connection that a
	// transaction holds, and that transaction may call lookup.
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[query]; ok {
		_ = st.Close()
		return old, nil
	}
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	if len(c.m) < maxCachedStmts {
		c.m[query] = st
	}
	return st, nil
}

// lookup returns the cached statement of query, or nil.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		_ = st.Close()
	}
	c.m = nil
}

// rquery runs a cached read statement on the read pool.
func (s *Store) rquery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.rstmts.get(ctx, s.r, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// rqueryRow runs a cached single-row read statement on the read pool.
func (s *Store) rqueryRow(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	st, err := s.rstmts.get(ctx, s.r, query)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(ctx, args...), nil
}

// sweepWAL, when a background checkpoint asked for it, checkpoints on the
// write connection, still held after a commit: nothing is appended while
// it runs, so it copies every frame left (those appended during the
// background pass) and the next write transaction starts the WAL over
// from its beginning (see checkpoint.go). It sweeps once per request of
// the checkpointer; a sweep that cannot finish (a reader still on old
// frames, an error) waits for the next background pass to ask again.
func (s *Store) sweepWAL() {
	if !s.ckpt.sweep.CompareAndSwap(true, false) {
		return
	}
	st, err := s.wr.stmt(context.Background(), sqlPassiveCheckpoint)
	if err == nil {
		_, _, err = scanCheckpoint(st.QueryRowContext(context.Background()))
	}
	if err != nil {
		slog.Warn("sqlite: checkpoint on the write connection", "err", s.wr.note(err))
	}
}

// writeTx runs fn in one BEGIN IMMEDIATE transaction on the write
// connection and commits it.
func (s *Store) writeTx(ctx context.Context, fn func(tx *connTx) error) error {
	if err := s.wr.begin(ctx); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer s.wr.release()
	return s.finish(fn)
}

// finish runs fn in the transaction open on the held write connection and
// commits, or rolls back if fn fails. It drops the space memos: fn may
// write a space's row or commits (spacememo.go).
func (s *Store) finish(fn func(tx *connTx) error) error {
	s.memos.drop()
	return s.finishKeepingMemos(fn)
}

// finishKeepingMemos is finish for a transaction that writes neither a
// space's row nor its commits (a delivery's completion): the space
// memos stay true.
func (s *Store) finishKeepingMemos(fn func(tx *connTx) error) error {
	if err := fn(&connTx{w: s.wr}); err != nil {
		_ = s.wr.abort()
		return err
	}
	if err := s.wr.commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	s.ckpt.committed(1)
	return nil
}

// lazyWriteTx is writeTx for a transaction that need not wait for its own
// fsync: it commits with synchronous=NORMAL, so a power loss may lose it
// (and whatever else came after the last synced commit) but never tears
// or reorders the log, and the next synced commit makes it durable too.
// The write connection's level is restored afterwards; a connection that
// cannot be restored is replaced, so no later commit inherits NORMAL.
// Where NORMAL is the configured level (relaxed durability) it is writeTx.
// fn must write neither a space's row nor its commits: the space memos
// stay (finishKeepingMemos), so the next commit need not read its
// space's row again.
func (s *Store) lazyWriteTx(ctx context.Context, fn func(tx *connTx) error) error {
	if err := s.wr.acquire(ctx); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer s.wr.release()
	if s.sync != "NORMAL" {
		if err := s.wr.run(ctx, "PRAGMA synchronous=NORMAL"); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		defer s.restoreSync()
	}
	if err := s.wr.run(ctx, sqlBegin); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	return s.finishKeepingMemos(fn)
}

// restoreSync sets the held write connection's synchronous level back to
// the configured one, or marks it broken (replaced on release) if it
// cannot.
func (s *Store) restoreSync() {
	if err := s.wr.run(context.Background(), "PRAGMA synchronous="+s.sync); err != nil {
		s.wr.broken = true
	}
}

// translate maps driver errors to the store sentinels, once, at the
// boundary: no rows becomes ErrNotFound, a uniqueness violation ErrExists.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	var se *msqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
			return fmt.Errorf("%w: %w", store.ErrExists, err)
		}
		if unavailableCodes[se.Code()&0xff] {
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
	}
	if errors.Is(err, sql.ErrConnDone) || err.Error() == errDBClosed {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

// errDBClosed is the text of database/sql's unexported error for a
// closed *sql.DB.
const errDBClosed = "sql: database is closed"

// unavailableCodes are the primary SQLite result codes that say the
// database cannot be used now, not that the statement is wrong: another
// process holds the lock past the busy timeout, the file cannot be opened
// or read, the disk is full.
var unavailableCodes = map[int]bool{
	sqlite3.SQLITE_BUSY: true, sqlite3.SQLITE_LOCKED: true, sqlite3.SQLITE_IOERR: true,
	sqlite3.SQLITE_CANTOPEN: true, sqlite3.SQLITE_FULL: true, sqlite3.SQLITE_READONLY: true,
	sqlite3.SQLITE_PROTOCOL: true,
}

// wrap prefixes err with the driver name and an operation.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("sqlite: %s: %w", op, translate(err))
}
