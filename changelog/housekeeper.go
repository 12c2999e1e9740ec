package changelog

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// DefaultHousekeepInterval is how often a Housekeeper runs when its
// interval is not positive.
const DefaultHousekeepInterval = time.Minute

// Tunables of the housekeeping loop; tests may shrink them.
var (
	// HousekeepMaxBackoff caps the wait after consecutive failed passes
	// (it never goes below the interval).
	HousekeepMaxBackoff = 15 * time.Minute
	// HousekeepLogEvery is how often repeated failures are logged: the
	// first failure is, then at most one line per period, and the
	// recovery always is.
	HousekeepLogEvery = time.Minute
)

// ErrHousekeeperStopped is returned by Start after Stop.
var ErrHousekeeperStopped = errors.New("housekeeper stopped")

// Housekeeper runs Log.Housekeep with a retention policy in the
// background: once at Start, then every interval, backing off
// exponentially while passes fail.
type Housekeeper struct {
	log      *Log
	policy   Retention
	interval time.Duration
	logger   *slog.Logger
	onPass   func(HousekeepReport, error) // test hook; nil in production

	mu      sync.Mutex
	started bool               // guarded by mu
	stopped bool               // guarded by mu
	stop    chan struct{}      // closed by Stop
	cancel  context.CancelFunc // ends a pass in progress; set by Start
	done    chan struct{}      // closed when the loop returns; set by Start
}

// NewHousekeeper returns a stopped Housekeeper of log with policy. An
// interval <= 0 is DefaultHousekeepInterval; a nil logger is
// slog.Default(). Receipts past the idempotency window are expired even
// when policy prunes nothing.
func NewHousekeeper(log *Log, policy Retention, interval time.Duration, logger *slog.Logger) *Housekeeper {
	if interval <= 0 {
		interval = DefaultHousekeepInterval
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Housekeeper{log: log, policy: policy, interval: interval, logger: logger, stop: make(chan struct{})}
}

// Start starts the loop and returns at once. The loop outlives ctx (it
// keeps ctx's values) and runs until Stop. A second Start is a no-op; a
// Start after Stop is ErrHousekeeperStopped.
func (h *Housekeeper) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return ErrHousekeeperStopped
	}
	if h.started {
		return nil
	}
	h.started = true
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.cancel, h.done = cancel, make(chan struct{})
	go h.run(runCtx)
	return nil
}

// Stop lets a pass in progress finish and returns once the loop has
// ended. If ctx ends first, it cancels the pass, waits for the loop and
// returns ctx.Err(). It is idempotent and safe if Start never ran.
func (h *Housekeeper) Stop(ctx context.Context) error {
	h.mu.Lock()
	if !h.stopped {
		h.stopped = true
		close(h.stop)
	}
	cancel, done := h.cancel, h.done
	h.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		cancel()
		return nil
	case <-ctx.Done():
		cancel()
		<-done
		return ctx.Err()
	}
}

// run is the loop: a pass, then a wait of the interval (or the backoff
// after a failure), until Stop.
func (h *Housekeeper) run(ctx context.Context) {
	defer close(h.done)
	var st failState
	for {
		rep, err := h.log.Housekeep(ctx, h.policy)
		if ctx.Err() != nil {
			return // Stop cancelled the pass
		}
		h.report(&st, rep, err)
		if h.onPass != nil {
			h.onPass(rep, err)
		}
		t := time.NewTimer(backoff(h.interval, st.failures))
		select {
		case <-h.stop:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// failState tracks a run of consecutive failed passes.
type failState struct {
	failures int       // consecutive failed passes
	since    time.Time // when the first of them failed
	logged   time.Time // when a failure was last logged
}

// report logs a pass: failures rate-limited, the recovery after them
// always, a pass that pruned at Info and anything else at Debug.
func (h *Housekeeper) report(st *failState, rep HousekeepReport, err error) {
	now := time.Now()
	if err != nil {
		if st.failures == 0 {
			st.since = now
		}
		st.failures++
		if st.failures == 1 || now.Sub(st.logged) >= HousekeepLogEvery {
			st.logged = now
			h.logger.Warn("housekeeping failed; backing off", "err", err,
				"failures", st.failures, "retryIn", backoff(h.interval, st.failures))
		}
		return
	}
	if st.failures > 0 {
		h.logger.Info("housekeeping recovered", "failures", st.failures, "after", now.Sub(st.since).Round(time.Millisecond))
		*st = failState{}
	}
	level := slog.LevelDebug
	if rep.PrunedCommits > 0 {
		level = slog.LevelInfo
	}
	h.logger.Log(context.Background(), level, "housekeeping pass", "spaces", rep.Spaces,
		"prunedSpaces", len(rep.Pruned), "prunedCommits", rep.PrunedCommits, "receiptsExpired", rep.ReceiptsExpired)
}

// backoff is the wait before the next pass after failures consecutive
// failed ones: the interval doubled per failure, capped at
// max(interval, HousekeepMaxBackoff).
func backoff(interval time.Duration, failures int) time.Duration {
	ceiling := max(interval, HousekeepMaxBackoff)
	d := interval
	for range failures {
		if d >= ceiling/2 {
			return ceiling
		}
		d *= 2
	}
	return d
}
