package postgres

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/eddy-run/eddy/store"
)

// NotifyChannel is the channel a write transaction that appended commits
// notifies, inside the transaction, with the payload "<space>:<head>",
// unless no other process listens (see presence); an empty payload asks
// every listener to re-check every head.
const NotifyChannel = "eddy_commits"

// DefaultMaxConns is the pool size Open uses unless the URL sets
// pool_max_conns. It is well above pgx's default (4 on small machines)
// because every space with a writer holds a connection for its write
// transaction, and callers may read through the pool meanwhile.
var DefaultMaxConns = int32(max(16, 4*runtime.NumCPU()))

var _ store.Store = (*Store)(nil)

// Store is the PostgreSQL driver. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time
	// tokens answers TokenGeneration while Listen hears TokenChannel.
	tokens tokenGeneration
	// rawRowBytes is the mean JSON size of the rows of the last raw
	// commit page read, to size the next one's arena (readRawPage).
	rawRowBytes atomic.Int64
	// lent holds the memory of raw pages read with Recycle until it is
	// handed back (recycle.go).
	lent lentPages
	// rowBytes is the mean payload size of the rows of the last wire row
	// page read, to size the next one's arena (Rows).
	rowBytes atomic.Int64
	// stats keeps the busiest tables' planner statistics (stats.go).
	stats *statsKeeper
	// presence decides whether commits NOTIFY (presence.go).
	presence *presence
	// beforeSend, if set, is called by Commit once it chose whether to
	// notify, before it sends anything; nil outside tests.
	beforeSend func()
}

// Options tune OpenOptions. The zero value is Open's behaviour.
type Options struct {
	// AsyncCommit sets synchronous_commit=off on every connection: a
	// commit is acknowledged before its WAL reaches disk. A power loss
	// (or a server crash) may lose the last moments of acknowledged
	// writes, never corrupts or reorders them.
	AsyncCommit bool
}

// Open connects a pool to the database at url (a postgres:// URL or a
// keyword/value string; pgxpool settings such as pool_max_conns apply).
// It does not migrate; call Migrate.
func Open(ctx context.Context, url string) (*Store, error) {
	return OpenOptions(ctx, url, Options{})
}

// OpenOptions is Open with explicit options.
func OpenOptions(ctx context.Context, url string, o Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	if o.AsyncCommit {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	cfg.ConnConfig.BuildFrontend = bufferedFrontend
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		registerArrays(c.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: ping: %w", err)
	}
	s := &Store{pool: pool, now: time.Now, presence: newPresence(pool)}
	s.startStatsKeeper()
	return s, nil
}

// readBuffer is the size of each connection's socket read buffer. pgx
// reads in 8 KiB chunks by default; a catch-up streams pages of megabytes,
// and larger reads cost far fewer system calls per row.
const readBuffer = 128 << 10

// bufferedFrontend is pgx's frontend reading through a readBuffer-sized
// buffer.
func bufferedFrontend(r io.Reader, w io.Writer) *pgproto3.Frontend {
	return pgproto3.NewFrontend(bufio.NewReaderSize(r, readBuffer), w)
}

// Pool returns the underlying connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close stops the statistics keeper and closes the pool, waiting for
// acquired connections to be released.
func (s *Store) Close() error {
	s.stats.close()
	s.pool.Close()
	return nil
}

// SQLSTATE codes the driver translates.
const (
	codeUniqueViolation = "23505"
	// codeStaleExpectation is raised by eddy_expect (migration 0002) when
	// an optimistic write's prediction is wrong.
	codeStaleExpectation = "EDY01"
)

// translate maps driver errors onto the store sentinels, once, at the
// boundary: no rows becomes store.ErrNotFound and a unique violation
// store.ErrExists. The original error stays in the chain.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return &sentinelError{sentinel: store.ErrNotFound, err: err}
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == codeUniqueViolation {
		return &sentinelError{sentinel: store.ErrExists, err: err}
	}
	if errors.As(err, &pgErr) && pgErr.Code == codeStaleExpectation {
		return &sentinelError{sentinel: store.ErrStale, err: err}
	}
	if unreachable(err) {
		return &sentinelError{sentinel: store.ErrUnavailable, err: err}
	}
	return err
}

// unreachable reports whether err says the database cannot be reached: a
// failed or broken connection, a closed pool, or a server refusing
// connections or shutting them down (SQLSTATE class 08, 57P01-57P03,
// 53300).
func unreachable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		c := pgErr.Code
		return strings.HasPrefix(c, "08") || c == "57P01" || c == "57P02" || c == "57P03" || c == "53300"
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connErr) || errors.As(err, &netErr) ||
		errors.Is(err, puddle.ErrClosedPool) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// wrap translates err and adds short context; nil stays nil.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("postgres: %s: %w", op, translate(err))
}

// sentinelError carries a store sentinel alongside the driver error it
// translates, so errors.Is matches both.
type sentinelError struct {
	sentinel error
	err      error
}

// Error implements error.
func (e *sentinelError) Error() string { return e.err.Error() }

// Unwrap returns the sentinel and the original error.
func (e *sentinelError) Unwrap() []error { return []error{e.sentinel, e.err} }

// notFound returns a wrapped store.ErrNotFound with context.
func notFound(op, what string) error {
	return fmt.Errorf("postgres: %s: %s: %w", op, what, store.ErrNotFound)
}

// microUTC returns t in UTC truncated to microseconds, the precision the
// database keeps.
func microUTC(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// nowMicro returns the current time as stored.
func (s *Store) nowMicro() time.Time { return microUTC(s.now()) }

// orNow returns t as stored, or the current time when t is zero.
func (s *Store) orNow(t time.Time) time.Time {
	if t.IsZero() {
		return s.nowMicro()
	}
	return microUTC(t)
}

// limitArg maps a non-positive limit to NULL, which PostgreSQL reads as
// no limit.
func limitArg(n int) *int64 {
	if n <= 0 {
		return nil
	}
	v := int64(n)
	return &v
}
