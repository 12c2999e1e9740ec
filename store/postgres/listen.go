package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eddy-run/eddy/store"
)

var _ store.Notifier = (*Store)(nil)

// ListenApplicationName is the application_name of the connection Listen
// holds, so operators (and tests) can find it in pg_stat_activity.
const ListenApplicationName = "eddy-listen"

// Tunables of Listen; tests shrink them.
var (
	// listenBackoffMin and listenBackoffMax bound the exponential delay
	// between reconnect attempts.
	listenBackoffMin = 100 * time.Millisecond //nolint:revive // Min is minimum, not minutes
	listenBackoffMax = 5 * time.Second
	// listenPingInterval is how long the listener waits for a
	// notification before it pings the server, so a connection that died
	// silently is noticed.
	listenPingInterval = 30 * time.Second
	// listenPingTimeout bounds that ping.
	listenPingTimeout = 5 * time.Second
	// listenLogEvery rate-limits the log of repeated connection failures.
	listenLogEvery = 30 * time.Second
)

// Listen implements store.Notifier: it holds one dedicated connection
// (outside the pool) that LISTENs on NotifyChannel and calls fn with the
// space and head of every notification, from this process or any other.
// The same connection hears TokenChannel, so TokenGeneration answers
// from memory while it is up.
// After every (re)connect it calls fn("", -1): notifications may have been
// missed while no connection listened. A lost connection is re-established
// with exponential backoff. Listen returns ctx.Err() when ctx ends; fn
// must not block.
func (s *Store) Listen(ctx context.Context, fn func(space string, head int64)) error {
	if fn == nil {
		return errors.New("postgres: listen: nil callback")
	}
	l := &listener{store: s, fn: fn, logger: slog.Default().With("component", "postgres.listen")}
	return l.run(ctx)
}

// listener is the state of one Listen call.
type listener struct {
	store  *Store
	fn     func(space string, head int64)
	logger *slog.Logger

	pid     uint32    // the backend of the current connection
	counted time.Time // when the other listeners were last counted
	// countRefused is set once the server refused to count listeners.
	countRefused bool

	failures  int       // failed attempts since the last connect
	downSince time.Time // when the current outage began
	lastLog   time.Time // when a failure was last logged
	logged    bool      // whether the current outage was logged
}

// run connects, listens until the connection fails, and reconnects until
// ctx ends.
func (l *listener) run(ctx context.Context) error {
	delay := listenBackoffMin
	for {
		conn, err := l.connect(ctx)
		if err == nil {
			l.recovered()
			l.store.tokens.invalidate(1)
			err = l.count(ctx, conn)
		}
		if err == nil {
			l.fn("", -1)
			start := time.Now()
			err = l.receive(ctx, conn)
			l.store.tokens.invalidate(-1)
			closeConn(conn)
			// Nobody hears other listeners' notices now.
			l.loud()
			if time.Since(start) >= listenBackoffMax {
				// A connection that held for a while resets the
				// backoff; one that fails at once keeps growing it.
				delay = listenBackoffMin
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		l.failed(err, delay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, listenBackoffMax)
	}
}

// connect opens a dedicated connection with the pool's settings, LISTENs
// on NotifyChannel, TokenChannel and PresenceChannel, then holds the
// presence lock and announces it (see presence).
func (l *listener) connect(ctx context.Context) (*pgx.Conn, error) {
	cfg := l.store.pool.Config().ConnConfig.Copy()
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = ListenApplicationName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel+"; LISTEN "+TokenChannel+"; LISTEN "+PresenceChannel); err != nil {
		closeConn(conn)
		return nil, fmt.Errorf("listen: %w", err)
	}
	if err := holdPresence(ctx, conn); err != nil {
		closeConn(conn)
		return nil, err
	}
	l.pid = conn.PgConn().PID()
	return conn, nil
}

// receive delivers notifications until the connection fails or ctx ends.
// Every presenceInterval it counts the other listeners; every
// listenPingInterval without a notification it pings the server.
func (l *listener) receive(ctx context.Context, conn *pgx.Conn) error {
	for {
		if time.Since(l.counted) >= presenceInterval {
			if err := l.count(ctx, conn); err != nil {
				return err
			}
		}
		wait := min(listenPingInterval, presenceInterval-time.Since(l.counted))
		wctx, cancel := context.WithTimeout(ctx, wait)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil && n.Channel == TokenChannel:
			l.store.tokens.invalidate(0)
		case err == nil && n.Channel == PresenceChannel:
			if n.PID != l.pid {
				l.loud()
			}
		case err == nil:
			l.deliver(n.Payload)
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			if time.Since(l.counted) >= presenceInterval {
				continue // the count is the round trip
			}
			if err := ping(ctx, conn); err != nil {
				return err
			}
		default:
			return fmt.Errorf("wait for notification: %w", err)
		}
	}
}

// count counts the other listeners on conn: with none, this store's
// commits go quiet; with some, loud.
func (l *listener) count(ctx context.Context, conn *pgx.Conn) error {
	cctx, cancel := context.WithTimeout(ctx, listenPingTimeout)
	defer cancel()
	n, err := countOthers(cctx, conn)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		// The server refused the count (pg_locks revoked, say): stay
		// loud rather than lose the connection over it.
		if !l.countRefused {
			l.logger.Warn("cannot count listeners; commits keep notifying", "err", err)
			l.countRefused = true
		}
		n = 1
	case err != nil:
		return err
	}
	l.counted = time.Now()
	if n == 0 {
		l.store.presence.alone()
	} else {
		l.loud()
	}
	return nil
}

// loud turns the store's commits loud (see presence.loud).
func (l *listener) loud() {
	l.store.presence.loud(context.Background())
}

// ping checks that conn still answers.
func ping(ctx context.Context, conn *pgx.Conn) error {
	pctx, cancel := context.WithTimeout(ctx, listenPingTimeout)
	defer cancel()
	if err := conn.Ping(pctx); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// deliver parses one payload and calls fn; an empty one asks for a
// re-check of every head; a malformed payload is logged and dropped.
func (l *listener) deliver(payload string) {
	if payload == "" {
		l.fn("", -1)
		return
	}
	space, head, ok := parsePayload(payload)
	if !ok {
		l.logger.Warn("ignoring malformed notification", "channel", NotifyChannel, "payload", payload)
		return
	}
	l.fn(space, head)
}

// parsePayload splits "<space>:<head>" on its last colon: space names
// contain no colon, but may contain dots and dashes.
func parsePayload(p string) (space string, head int64, ok bool) {
	i := strings.LastIndexByte(p, ':')
	if i <= 0 {
		return "", 0, false
	}
	head, err := strconv.ParseInt(p[i+1:], 10, 64)
	if err != nil || head < 0 {
		return "", 0, false
	}
	return p[:i], head, true
}

// failed records a failed attempt and logs it, at most once every
// listenLogEvery.
func (l *listener) failed(err error, retry time.Duration) {
	now := time.Now()
	if l.failures == 0 {
		l.downSince = now
	}
	l.failures++
	if !l.lastLog.IsZero() && now.Sub(l.lastLog) < listenLogEvery {
		return
	}
	l.lastLog, l.logged = now, true
	l.logger.Warn("commit notifications interrupted; reconnecting",
		"err", err, "attempts", l.failures, "retryIn", retry)
}

// recovered ends an outage, saying so if its start was logged.
func (l *listener) recovered() {
	if l.logged {
		l.logger.Info("commit notifications restored",
			"attempts", l.failures, "down", time.Since(l.downSince).Round(time.Millisecond))
	}
	l.failures, l.logged = 0, false
}

// closeConn closes a listener connection on a short, uncancelled deadline.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}
