package watch

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
)

// Tunables: the defaults of Options. Tests shrink them through Options.
var (
	// DefaultHeartbeat is how long a stream may stay silent before it
	// sends the heartbeat {}.
	DefaultHeartbeat = 15 * time.Second
	// DefaultTailSize is how many recent rows a space hub keeps in memory
	// (at least; it trims in steps of this size), and how many a
	// caught-up watcher may have queued before it is dropped to catch-up
	// reads.
	DefaultTailSize = 4096
	// DefaultCatchUpBatch is how many rows one catch-up read from the
	// store asks for.
	DefaultCatchUpBatch = 1000
	// DefaultReadBatch is how many rows one shared read of a space hub
	// asks for.
	DefaultReadBatch = 1000
	// DefaultWriteTimeout bounds one write to a client: a client that
	// reads nothing for this long is a stalled consumer, disconnected
	// with the terminal frame {"error":{"code":"unavailable","details":
	// {"reason":"slow_consumer"}}} when it still fits.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultMaxStreams caps the open streams of a hub (watch and live
	// view streams together).
	DefaultMaxStreams = 2048
	// DefaultMaxStreamsPerKey caps the open streams of one key (a token).
	DefaultMaxStreamsPerKey = 256
	// DefaultMaxBuffer bounds the bytes a stream encodes before writing
	// them: what a stream whose client does not read can hold.
	DefaultMaxBuffer = 32 << 10
	// RetryAfter is the Retry-After of a stream refused at a cap.
	RetryAfter = 5 * time.Second
	// Takeover makes an HTTP/1.1 stream take its connection over from
	// net/http (hijack) once it starts: an idle stream then costs about
	// 7 KiB instead of about 40, but http.Server no longer tracks the
	// connection (Shutdown and Close leave it to Hub.Stop, and
	// httptest.Server.CloseClientConnections cannot cut it). New reads
	// it.
	Takeover = true
)

// ErrStopped reports a Start after Stop.
var ErrStopped = errors.New("watch: hub stopped")

// Options tune a Hub. Zero fields take the package defaults.
type Options struct {
	// Heartbeat is the idle heartbeat interval (DefaultHeartbeat).
	Heartbeat time.Duration
	// TailSize is the in-memory tail per space, and the most rows a
	// caught-up watcher may have queued, in rows (DefaultTailSize).
	TailSize int
	// CatchUpBatch is the rows per catch-up read (DefaultCatchUpBatch).
	CatchUpBatch int
	// ReadBatch is the rows per shared read (DefaultReadBatch).
	ReadBatch int
	// WriteTimeout bounds each write to a client (DefaultWriteTimeout).
	WriteTimeout time.Duration
	// MaxStreams caps the hub's open streams (DefaultMaxStreams); more
	// are refused with 429 rate_limited and Retry-After.
	MaxStreams int
	// MaxStreamsPerKey caps the open streams of one key, the token that
	// opened them (DefaultMaxStreamsPerKey).
	MaxStreamsPerKey int
	// MaxBuffer bounds the bytes a stream encodes between writes
	// (DefaultMaxBuffer).
	MaxBuffer int
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
	def(&o.CatchUpBatch, DefaultCatchUpBatch)
	def(&o.ReadBatch, DefaultReadBatch)
	def(&o.MaxStreams, DefaultMaxStreams)
	def(&o.MaxStreamsPerKey, DefaultMaxStreamsPerKey)
	def(&o.MaxBuffer, DefaultMaxBuffer)
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
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
	stalls   atomic.Int64   // streams ended for a client that stopped reading
	writing  atomic.Int64   // watch streams in the middle of a write (tests read it)
	loops    sync.WaitGroup // space loops and the listener

	// Lock order: mu before spaceHub.mu.
	mu      sync.RWMutex
	spaces  map[string]*spaceHub // guarded by mu
	perKey  map[string]int       // open streams by key; guarded by mu
	started bool                 // guarded by mu
	stopped bool                 // guarded by mu
	// unsubscribe ends the changelog subscription Start made; guarded by mu.
	unsubscribe func()
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
		perKey:   make(map[string]int),
	}
}

// Heartbeat returns the idle heartbeat interval in use.
func (h *Hub) Heartbeat() time.Duration { return h.opts.Heartbeat }

// Start subscribes to the changelog's commit notifications (on a
// store.Notifier, other processes' commits; changelog.Log.Subscribe). It returns at once; a second Start is a no-op, a Start
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
	h.unsubscribe = h.log.Subscribe(h.notified)
	return nil
}

// notified handles a commit notification from the changelog: it wakes
// the space's watchers.
func (h *Hub) notified(space string, head int64) { h.Notify(space, head) }

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
		h.mu.Lock()
		unsubscribe := h.unsubscribe
		h.unsubscribe = nil
		h.mu.Unlock()
		if unsubscribe != nil {
			unsubscribe()
		}
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

// enter registers a new stream of key: an unavailable problem once the
// hub is stopping, rate_limited at a cap.
func (h *Hub) enter(key string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.stopped:
		return problem.New(problem.Unavailable, "the server is shutting down")
	case h.open.Load() >= int64(h.opts.MaxStreams):
		return &capError{problem.New(problem.RateLimited, "the server holds its limit of %d open streams; retry later", h.opts.MaxStreams).
			With("limit", h.opts.MaxStreams)}
	case h.perKey[key] >= h.opts.MaxStreamsPerKey:
		return &capError{problem.New(problem.RateLimited, "this token holds its limit of %d open streams; close one or retry later", h.opts.MaxStreamsPerKey).
			With("limit", h.opts.MaxStreamsPerKey)}
	}
	h.perKey[key]++
	h.streams.Add(1)
	h.open.Add(1)
	return nil
}

// exit unregisters a stream enter registered.
func (h *Hub) exit(key string) {
	h.mu.Lock()
	if h.perKey[key]--; h.perKey[key] <= 0 {
		delete(h.perKey, key)
	}
	h.mu.Unlock()
	h.open.Add(-1)
	h.streams.Done()
}

// capError is a stream refused at a cap; refuse renders it.
type capError struct{ pe *problem.Error }

func (e *capError) Error() string { return e.pe.Error() }
func (e *capError) Unwrap() error { return e.pe }

// refuse returns the error of enter for the caller to render, with
// Retry-After set on w when the refusal is a cap.
func refuse(w http.ResponseWriter, err error) error {
	var ce *capError
	if errors.As(err, &ce) {
		w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
		return ce.pe
	}
	return err
}

// keyCtx carries the key streams are counted under.
type keyCtx struct{}

// WithKey returns ctx carrying key: a stream served for a request with
// this context counts against key's MaxStreamsPerKey (the empty key when
// none is set).
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyCtx{}, key)
}

func keyOf(ctx context.Context) string {
	k, _ := ctx.Value(keyCtx{}).(string)
	return k
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
