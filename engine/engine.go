// Package engine runs triggers: it holds leases on triggers, evaluates
// the changelog past each trigger's cursor, creates deliveries, runs
// them through package functions, fires cron triggers and
// answers operators (enable, disable, reset, replay, deliveries,
// stances, fences).
//
// One Engine runs per process. Every trigger is driven by the process
// holding its lease (see store.LeaseParams): the lease's epoch fences
// every cursor advance and delivery completion, so a process that lost a
// lease writes nothing more for that trigger.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/internal/sortid"
	"github.com/eddy-run/eddy/store"
)

// Defaults of Options.
const (
	DefaultLeaseTTL = 15 * time.Second
	DefaultBatch    = 1000
	DefaultPoll     = time.Second
)

// Options tune an Engine. The zero value is usable.
type Options struct {
	// Owner names this process in leases (default host-pid-random).
	Owner string
	// LeaseTTL is how long a lease lives unrenewed (default 15s); leases
	// are renewed every LeaseTTL/3.
	LeaseTTL time.Duration
	// Batch bounds the rows (changes) of one evaluation batch, judged
	// and coalesced together (default 1000); a catch-up commits up to 8
	// batches in one transaction.
	Batch int
	// Poll is how often a space is re-checked without a wake-up (default
	// 1s); commits of this process (Notify, wired to the log's OnCommit)
	// and, on PostgreSQL, every process's (the changelog subscription
	// Start makes, changelog.Log.Subscribe) wake it at once.
	Poll time.Duration
	// SpaceCap is the causality cap of every space (default
	// causality.DefaultCap).
	SpaceCap int
	// SpaceBudget is the causal budget of every space: the rows one root
	// write may cause in all (default causality.DefaultBudget).
	SpaceBudget int
	// Client sends webhook requests (default Egress.Client(): no global
	// timeout, each request bounded by its attempt's timeout, every
	// connection checked against Egress). A redirect is never followed,
	// whatever the client's CheckRedirect.
	Client *http.Client
	// Egress is the webhook destination policy of the default Client
	// (nil: functions.DefaultDeny only).
	Egress *functions.Egress
	// Logger receives operational logs (default slog.Default()).
	Logger *slog.Logger
	// Now is the engine's clock (default time.Now).
	Now func() time.Time
	// Observe, if set, is told about evaluation batches and finished
	// delivery attempts (for metrics). It must not block.
	Observe func(Event)
	// InCommitCandidates bounds the trigger candidates (rows times the
	// triggers the match index reaches) judged inside one group commit's
	// transaction (default DefaultInCommitCandidates; negative: never
	// judge in the commit, only in the evaluator). Past it, or past
	// InCommitCost, the evaluator judges the group after its commit.
	InCommitCandidates int
	// InCommitCost bounds the CEL cost (each candidate's cost bound)
	// judged inside one group commit's transaction (default
	// DefaultInCommitCost).
	InCommitCost uint64
}

// Event is one thing the engine did, for Options.Observe.
type Event struct {
	Space   string
	Trigger string
	// Kind is "evaluated" (Rows rows judged, Matched deliveries created)
	// or "delivery" (an attempt ended with Outcome: succeeded, retrying,
	// failed, parked).
	Kind    string
	Rows    int
	Matched int
	Parked  int
	Outcome string
	// Duration is how long the batch or the attempt took.
	Duration time.Duration
}

// Engine runs the triggers of every space of one store.
type Engine struct {
	st     store.Store
	log    *changelog.Log
	reg    *functions.Registry
	keys   *causality.Keyring
	defs   defCache
	opts   Options
	logger *slog.Logger

	// Lock order: e.mu before sr.mu before d.mu; progressMu, liveMu
	// and the completer's mu are leaves (nothing is locked while holding
	// them). The in-commit path (incommit.go) only TryLocks sr.mu.
	mu      sync.Mutex
	spaces  map[string]*spaceRun // guarded by mu
	started bool                 // guarded by mu; set by Start and by Stop
	running bool                 // guarded by mu; the lease manager was launched
	cancel  context.CancelFunc   // guarded by mu; nil before Start and after Stop
	// unsubscribe ends the changelog subscription of Start (the
	// wake-ups of other processes' commits); guarded by mu, nil before
	// Start and after Stop.
	unsubscribe func()
	stopped     chan struct{} // closed when the lease manager has stopped
	wg          sync.WaitGroup
	kick        chan struct{}

	// live mirrors spaces for the in-commit path, which must not take
	// mu (see incommit.go).
	liveMu sync.Mutex
	live   map[string]*spaceRun // guarded by liveMu
	// inCommitGroups counts the groups judged in their commit;
	// inCommitSkips those the budget left to the evaluator.
	inCommitGroups, inCommitSkips atomic.Int64

	// drains stops dispatchers off the lease manager's goroutine, at
	// most maxDrains at a time.
	drains *drainer

	completions *completer
	// riders are delivery updates waiting for a write group (ride.go);
	// rideWait bounds their wait.
	riders   riders
	rideWait time.Duration
	logRate  logLimiter

	// progress is closed and replaced whenever a cursor moves or a
	// delivery ends in this process, waking fences.
	progressMu sync.Mutex
	progress   chan struct{} // guarded by progressMu
}

// New returns an engine over the log's store; Start runs it. reg holds
// the process's Go handlers (nil: none).
func New(log *changelog.Log, reg *functions.Registry, opts Options) *Engine {
	st := log.Store()
	opts = withDefaults(opts)
	if reg == nil {
		reg = &functions.Registry{}
	}
	e := &Engine{
		st: st, log: log, reg: reg, keys: causality.NewKeyring(st), opts: opts, logger: opts.Logger,
		spaces: map[string]*spaceRun{}, live: map[string]*spaceRun{}, kick: make(chan struct{}, 1),
		progress:    make(chan struct{}),
		completions: newCompleter(st), drains: newDrainer(), stopped: make(chan struct{}),
		rideWait: defaultRideWait,
	}
	if opts.InCommitCandidates > 0 {
		log.SetInCommit(e.inCommit)
		if _, ok := st.(store.SingleWriter); ok {
			e.completions.ride = e.ride
		}
	}
	return e
}

func withDefaults(o Options) Options {
	if o.Owner == "" {
		o.Owner = defaultOwner()
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.SpaceCap <= 0 {
		o.SpaceCap = causality.DefaultCap
	}
	if o.SpaceBudget <= 0 {
		o.SpaceBudget = causality.DefaultBudget
	}
	if o.Client == nil {
		o.Client = o.Egress.Client()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.InCommitCandidates == 0 {
		o.InCommitCandidates = DefaultInCommitCandidates
	}
	if o.InCommitCost == 0 {
		o.InCommitCost = DefaultInCommitCost
	}
	return o
}

// defaultOwner names this process: host, pid and a random suffix (a
// restarted process never inherits its predecessor's leases).
func defaultOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), sortid.Random(6))
}

// Owner returns the name this process holds leases under.
func (e *Engine) Owner() string { return e.opts.Owner }

func (e *Engine) now() time.Time { return e.opts.Now().UTC() }

// Start runs the lease manager until Stop and returns at once; New
// starts nothing. A second Start, or a Start after Stop, is an error.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return errors.New("engine: already started")
	}
	e.started, e.running = true, true
	e.completions.start()
	ctx, e.cancel = context.WithCancel(context.WithoutCancel(ctx))
	e.unsubscribe = e.log.Subscribe(e.Notify)
	e.wg.Go(func() {
		defer close(e.stopped)
		e.manage(ctx)
	})
	return nil
}

// Stop stops the engine gracefully, in this order: the lease manager
// stops renewing; every space's evaluator stops; every dispatcher stops
// starting attempts and drains the ones under way, all in parallel (at
// most maxDrains at a time), each for at most drainTimeout or until
// ctx ends, whichever comes first, after which the attempts left are
// canceled; the leases are released (with their own deadline,
// releaseTimeout) so another process takes over at once; the process
// leaves the live processes; the shared delivery updates stop. It is
// idempotent and safe if the engine never started; it returns ctx's
// error if ctx ended before the drains did.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	cancel, unsubscribe := e.cancel, e.unsubscribe
	e.cancel, e.unsubscribe = nil, nil
	running := e.running
	e.started = true // no Start after Stop
	e.mu.Unlock()
	if unsubscribe != nil {
		unsubscribe() // outside mu: the listener may be waiting for it in Notify
	}
	if cancel == nil {
		if !running {
			e.completions.stop()
		}
		<-e.stoppedOrNever(running)
		return nil
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			e.drains.abortAll()
		case <-done:
		}
	}()
	cancel()
	e.wg.Wait()
	e.drains.wait()
	e.completions.stop()
	if ctx.Err() != nil {
		return fmt.Errorf("engine: stop: %w", ctx.Err())
	}
	return nil
}

// stoppedOrNever returns the channel closed when the manager stopped, or
// a closed channel when it never ran.
func (e *Engine) stoppedOrNever(running bool) <-chan struct{} {
	if running {
		return e.stopped
	}
	c := make(chan struct{})
	close(c)
	return c
}

// Notify tells the engine that space's head moved to head (a commit of
// this process, or a NOTIFY from another); head -1 with space "" means
// every space must re-check. It never blocks.
func (e *Engine) Notify(space string, head int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if space == "" {
		for _, sr := range e.spaces {
			sr.wake()
		}
		return
	}
	// A head the in-commit path already judged for every active
	// trigger leaves the evaluator asleep; one it kept for the next
	// group to judge wakes it only if no group has by then.
	sr := e.spaces[space]
	switch {
	case sr == nil || sr.judged(head):
	case sr.kept(head):
		time.AfterFunc(keptGrace, func() {
			if !sr.judged(head) {
				sr.wake()
			}
		})
	default:
		sr.wake()
	}
}

// poke makes the lease manager run a round now.
func (e *Engine) poke() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// progressed wakes every fence waiting in this process.
func (e *Engine) progressed() {
	e.progressMu.Lock()
	close(e.progress)
	e.progress = make(chan struct{})
	e.progressMu.Unlock()
}

// progressCh returns the channel the next progress closes.
func (e *Engine) progressCh() <-chan struct{} {
	e.progressMu.Lock()
	defer e.progressMu.Unlock()
	return e.progress
}

func (e *Engine) observe(ev Event) {
	if e.opts.Observe != nil {
		e.opts.Observe(ev)
	}
}
