package watch

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// Tunables: the defaults of Options. Tests shrink them through Options.
var (
	// DefaultHeartbeat is how long a stream may stay silent before it
	// sends the heartbeat {}.
	DefaultHeartbeat = 15 * time.Second
	// DefaultTailSize is how many recent rows a space hub keeps in memory
	// (at least; it trims in steps of this size).
	DefaultTailSize = 4096
	// DefaultWatcherBuffer is how many fan-out batches a caught-up watcher
	// may have queued before it is dropped to catch-up reads.
	DefaultWatcherBuffer = 32
	// DefaultCatchUpBatch is how many rows one catch-up read from the
	// store asks for.
	DefaultCatchUpBatch = 1000
	// DefaultReadBatch is how many rows one shared read of a space hub
	// asks for.
	DefaultReadBatch = 1000
	// WriteTimeout bounds the writes to a client: a client that reads
	// nothing for this long (at least three quarters of it: the deadline
	// moves in steps of a quarter) is disconnected.
	WriteTimeout = time.Minute
	// Takeover makes an HTTP/1.1 stream take its connection over from
	// net/http (hijack) once it starts: an idle stream then costs about
	// 7 KiB instead of about 40, but http.Server no longer tracks the
	// connection (Shutdown and Close leave it to Hub.Stop, and
	// httptest.Server.CloseClientConnections cannot cut it). New reads
	// it.
	Takeover = true
	// listenBackoffMax bounds the delay between restarts of a failed
	// store.Notifier Listen.
	listenBackoffMax = 30 * time.Second
)

// ErrStopped reports a Start after Stop.
var ErrStopped = errors.New("watch: hub stopped")

// Options tune a Hub. Zero fields take the package defaults.
type Options struct {
	// Heartbeat is the idle heartbeat interval (DefaultHeartbeat).
	Heartbeat time.Duration
	// TailSize is the in-memory tail per space, in rows (DefaultTailSize).
	TailSize int
	// WatcherBuffer is the fan-out buffer per watcher, in batches
	// (DefaultWatcherBuffer).
	WatcherBuffer int
	// CatchUpBatch is the rows per catch-up read (DefaultCatchUpBatch).
	CatchUpBatch int
	// OnNotify, if set, also hears every commit notification the store's
	// Listen delivers (other processes' commits included; space "" and
	// head -1 after a reconnect). It must not block.
	OnNotify func(space string, head int64)
	// ReadBatch is the rows per shared read (DefaultReadBatch).
	ReadBatch int
	// Logger receives operational logs (nil = slog.Default()).
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.TailSize, DefaultTailSize)
	def(&o.WatcherBuffer, DefaultWatcherBuffer)
	def(&o.CatchUpBatch, DefaultCatchUpBatch)
	def(&o.ReadBatch, DefaultReadBatch)
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Hub serves watch streams of one changelog: one space hub per watched
// space, woken by Notify (wire it to changelog.Options.OnCommit) and, once
// started, by the store's cross-process notifications.
//
// Lifecycle: Start returns promptly; Stop ends every stream with the
// terminal unavailable frame, waits for them, then stops the space hubs
// and the listener. Stop is idempotent and safe if Start never ran.
type Hub struct {
	log    *changelog.Log
	opts   Options
	ctx    context.Context // ends at Stop; space loops and the listener run under it
	cancel context.CancelFunc

	takeover bool // Takeover as of New

	// beforeCatchUp, when set by tests, runs before every catch-up read.
	beforeCatchUp func(pos int64)

	stopping chan struct{}  // closed by the first Stop
	subs     subscribers    // Subscribe's wake-ups
	streams  sync.WaitGroup // open streams
	open     atomic.Int64   // open streams, for Watchers
	loops    sync.WaitGroup // space loops and the listener

	// Lock order: mu before spaceHub.mu.
	mu      sync.RWMutex
	spaces  map[string]*spaceHub // guarded by mu
	started bool                 // guarded by mu
	stopped bool                 // guarded by mu
}

// New returns a Hub over lg. Wire lg's OnCommit to Hub.Notify.
func New(lg *changelog.Log, opts Options) *Hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{
		log:      lg,
		opts:     opts.withDefaults(),
		takeover: Takeover,
		ctx:      ctx,
		cancel:   cancel,
		stopping: make(chan struct{}),
		spaces:   make(map[string]*spaceHub),
	}
}

// Heartbeat returns the idle heartbeat interval in use.
func (h *Hub) Heartbeat() time.Duration { return h.opts.Heartbeat }

// Start starts listening for commits of other processes when the store is
// a store.Notifier. It returns at once; a second Start is a no-op, a Start
// after Stop is ErrStopped.
func (h *Hub) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return ErrStopped
	}
	if h.started {
		return nil
	}
	h.started = true
	if n, ok := h.log.Store().(store.Notifier); ok {
		h.loops.Add(1)
		go h.listen(n)
	}
	return nil
}

// notified handles a commit notification from the store: it wakes the
// space's watchers and tells Options.OnNotify.
func (h *Hub) notified(space string, head int64) {
	h.Notify(space, head)
	if h.opts.OnNotify != nil {
		h.opts.OnNotify(space, head)
	}
}

// listen runs the store's Listen until Stop, restarting it with backoff
// if it fails.
func (h *Hub) listen(n store.Notifier) {
	defer h.loops.Done()
	delay := 100 * time.Millisecond
	for {
		start := time.Now()
		err := n.Listen(h.ctx, h.notified)
		if h.ctx.Err() != nil {
			return
		}
		if time.Since(start) > listenBackoffMax {
			delay = 100 * time.Millisecond
		}
		h.opts.Logger.Warn("watch: listen for commits failed; retrying", "err", err, "retryIn", delay)
		t := time.NewTimer(delay)
		select {
		case <-h.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, listenBackoffMax)
	}
}

// Notify tells the hub that space has committed up to head. Space "" (with
// head -1) wakes every space hub. It never blocks.
func (h *Hub) Notify(space string, head int64) {
	if h == nil {
		return
	}
	h.subs.wake(space)
	h.mu.RLock()
	defer h.mu.RUnlock()
	if space == "" {
		for _, sh := range h.spaces {
			sh.poke()
		}
		return
	}
	if sh := h.spaces[space]; sh != nil && (head < 0 || head > sh.seen.Load()) {
		sh.poke()
	}
}

// Stop ends every stream with the terminal unavailable frame and returns
// when they have ended and the hub's goroutines have stopped, or when ctx
// ends (then with ctx.Err()).
func (h *Hub) Stop(ctx context.Context) error {
	h.mu.Lock()
	if !h.stopped {
		h.stopped = true
		close(h.stopping)
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() {
		h.streams.Wait()
		h.cancel()
		h.loops.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enter registers a new stream; false once the hub is stopping.
func (h *Hub) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return false
	}
	h.streams.Add(1)
	h.open.Add(1)
	return true
}

// exit unregisters a stream enter registered.
func (h *Hub) exit() {
	h.open.Add(-1)
	h.streams.Done()
}

// Watchers returns the number of open watch streams.
func (h *Hub) Watchers() int { return int(h.open.Load()) }

// space returns the space hub of space, starting it on first use.
func (h *Hub) space(space string) *spaceHub {
	h.mu.RLock()
	sh := h.spaces[space]
	h.mu.RUnlock()
	if sh != nil {
		return sh
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if sh = h.spaces[space]; sh == nil {
		sh = newSpaceHub(h, space)
		h.spaces[space] = sh
		h.loops.Add(1)
		go sh.run(h.ctx)
	}
	return sh
}
