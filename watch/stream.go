package watch

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// errShutdown ends the streams of a stopping hub.
var errShutdown = errors.New("watch: hub stopping")

// maxIdleBuf is the largest write buffer a watcher keeps between writes.
const maxIdleBuf = 64 << 10

// Params select one watch stream.
type Params struct {
	Space string
	// From is the position to resume after (exclusive); negative starts
	// at the space's head.
	From int64
	// Filter selects the rows sent; its Allow carries what the principal
	// may read and a compiled `when`. Rows it rejects are consumed and
	// covered by progress bookmarks.
	Filter changelog.Filter
	// Budget, if set, is the evaluation budget Filter's Allow spends (a
	// compiled when's): the stream starts it afresh before every batch it
	// judges (a catch-up read, a fan-out batch) and, once it fails, ends
	// with the terminal frame of its error.
	Budget Budget
}

// Budget is a per-batch evaluation budget (predicate.Eval implements it).
type Budget interface {
	// Reset starts a fresh budget whose evaluations end with ctx (the
	// stream's context).
	Reset(ctx context.Context)
	// Err is the error that exhausted the budget, or nil.
	Err() error
}

// Serve streams the watch p selects to w as ndjson. Errors found before
// the stream starts (an unknown space, From above the head, From below
// the horizon as *changelog.HistoryUnavailableError, a stopping hub) are
// returned with nothing written, for the caller to render. Once the
// stream has started Serve returns nil: it ends when the client goes
// away, or with a terminal {"error": …} frame. An HTTP/1.1 connection is
// taken over (hijacked) and served by a goroutine of the hub, so Serve
// returns at once; otherwise Serve returns when the stream ends.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, p Params) error {
	key := keyOf(r.Context())
	if err := h.enter(key); err != nil {
		return refuse(w, err)
	}
	from, caughtUp, err := h.position(r.Context(), p)
	if err != nil {
		h.exit(key)
		return err
	}
	hdr := w.Header()
	hdr.Set("Content-Type", ContentType)
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	wt := h.newWatcher(p, from)
	if s, ok := hijack(w, r, h.takeover, h.opts.WriteTimeout); ok {
		wt.sink = s
		if s.now != nil {
			wt.conn = s
		}
		ctx, cancel := context.WithCancel(h.ctx)
		if p.Budget != nil {
			// A when costs CPU per row: notice at once when the client
			// goes, not at the next write.
			go s.watchClose(cancel)
		}
		go func() {
			defer h.exit(key)
			defer cancel()
			wt.serve(ctx, caughtUp)
		}()
		return nil
	}
	defer h.exit(key)
	w.WriteHeader(http.StatusOK)
	wt.sink = newResponseSink(w, h.opts.WriteTimeout)
	wt.serve(r.Context(), caughtUp)
	return nil
}

// position validates p.From against the space: it returns where the
// stream starts and whether that is the head.
func (h *Hub) position(ctx context.Context, p Params) (int64, bool, error) {
	sp, err := h.log.Space(ctx, p.Space)
	if err != nil {
		return 0, false, err
	}
	from := p.From
	if from < 0 {
		from = sp.Head
	}
	if from > sp.Head {
		return 0, false, problem.Param("from", "%d is ahead of the head %d", from, sp.Head).With("head", sp.Head)
	}
	if from < sp.Horizon {
		return 0, false, &changelog.HistoryUnavailableError{Space: p.Space, Requested: from, Horizon: sp.Horizon}
	}
	return from, from == sp.Head, nil
}

// watcher is one stream's state. Its own goroutine touches it, except
// for the fan-out's side, which the space hub also uses (fanout.go);
// while direct is set, the hub owns the stream (pos, told, the
// connection) too.
type watcher struct {
	h     *Hub
	sh    *spaceHub
	space string
	ctx   context.Context // the stream's
	f     changelog.Filter
	b     Budget // may be nil
	sink  sink
	conn  *connSink     // sink, when the hub may write to it directly; else nil
	timer *time.Timer   // the idle heartbeat
	buf   []byte        // lines not yet written
	pos   int64         // last seq consumed
	told  int64         // last position the client has: a row sent or a bookmark
	batch int           // rows of the next catch-up read; 0 starts small
	woken chan struct{} // capacity 1: the fan-out queued something

	mu      sync.Mutex
	direct  bool      // the hub writes batches itself; guarded by mu
	queue   [][]item  // batches for the goroutine; guarded by mu
	queued  int       // rows in queue; guarded by mu
	dropped bool      // the hub dropped the watcher; guarded by mu
	short   bool      // a direct write left bytes unsent; guarded by mu
	wrote   time.Time // the last direct write; guarded by mu
}

// minCatchUp is the first catch-up read of a stream, and of one dropped
// from the fan-out for a full buffer: a client that does not read holds
// at most this many rows read for it (and MaxBuffer of encoded lines).
// Each read that is sent in full doubles it, up to CatchUpBatch.
const minCatchUp = 64

// nextBatch returns the rows of the next catch-up read.
func (wt *watcher) nextBatch() int {
	if wt.batch <= 0 {
		wt.batch = min(minCatchUp, wt.h.opts.CatchUpBatch)
	}
	return wt.batch
}

func (h *Hub) newWatcher(p Params, from int64) *watcher {
	return &watcher{h: h, sh: h.space(p.Space), space: p.Space, f: p.Filter, b: p.Budget, pos: from, told: from, woken: make(chan struct{}, 1)}
}

// serve sends the opening bookmark, runs the stream and ends it.
func (wt *watcher) serve(ctx context.Context, caughtUp bool) {
	wt.ctx = ctx
	wt.timer = time.NewTimer(wt.h.opts.Heartbeat)
	defer wt.timer.Stop()
	defer wt.sink.close()
	wt.buf = appendBookmark(wt.buf, wt.pos)
	if err := wt.flush(); err == nil {
		wt.end(ctx, wt.run(ctx, caughtUp))
	}
}

// run feeds the stream until it fails, the client leaves or the hub
// stops: from the hub's fan-out while caught up, by its own reads while
// behind.
func (wt *watcher) run(ctx context.Context, caughtUp bool) error {
	defer wt.sh.leave(wt)
	for {
		if !wt.sh.join(wt, wt.pos, caughtUp) {
			var err error
			if caughtUp, err = wt.catchUp(ctx); err != nil {
				return err
			}
			continue
		}
		if err := wt.follow(ctx); err != nil {
			return err
		}
		caughtUp = false // dropped: catch up by its own reads, starting small
		wt.batch = 0
	}
}

// follow serves a caught-up watcher until it fails or the hub drops it
// (then nil).
func (wt *watcher) follow(ctx context.Context) error {
	beat := false
	for {
		if joined, err := wt.drain(ctx, beat); err != nil || !joined {
			return err
		}
		select {
		case <-wt.woken:
			beat = false
		case <-wt.timer.C:
			beat = true
		case <-ctx.Done():
			return ctx.Err()
		case <-wt.h.stopping:
			return errShutdown
		}
	}
}

// drain takes the stream back from the fan-out and sends what it queued
// (in one write, up to MaxBuffer: under a burst, one write per burst)
// and what a direct write left unsent; with beat, the heartbeat too if
// the stream has been silent for its interval. It hands the stream back
// once nothing more is queued, and reports false when the hub dropped
// the watcher (what it consumed is written anyway).
func (wt *watcher) drain(ctx context.Context, beat bool) (bool, error) {
	for {
		queue, dropped := wt.claim()
		for _, items := range queue {
			if err := wt.consume(ctx, items); err != nil {
				return true, err
			}
		}
		wt.bookmark()
		if beat && len(wt.buf) == 0 && !wt.short {
			if idle := time.Since(wt.wrote); idle < wt.h.opts.Heartbeat {
				wt.timer.Reset(wt.h.opts.Heartbeat - idle)
			} else {
				wt.buf = append(wt.buf, heartbeatFrame...)
			}
		}
		beat = false
		if err := wt.flush(); err != nil {
			return true, err
		}
		if dropped {
			wt.sh.leave(wt)
			return false, nil
		}
		if wt.release() {
			return true, nil
		}
	}
}

// catchUp reads one batch from the store after pos and sends it. It
// reports whether the read reached the head.
func (wt *watcher) catchUp(ctx context.Context) (bool, error) {
	select {
	case <-wt.h.stopping:
		return false, errShutdown
	default:
	}
	if hook := wt.h.beforeCatchUp; hook != nil {
		hook(wt.pos)
	}
	wt.resetBudget(ctx)
	// The page is this watcher's alone and its rows are encoded into
	// wt.buf, so its memory goes back to the store for the next pages.
	page, err := wt.h.log.ReadWith(ctx, wt.space, wt.pos, wt.f, wt.nextBatch(), changelog.ReadOptions{Recycle: true})
	if err == nil {
		defer wt.h.log.RecycleRows(page.Rows)
		err = wt.budgetErr()
	}
	if err != nil {
		return false, err
	}
	for i := range page.Rows {
		if r := &page.Rows[i]; r.Seq > wt.pos {
			wt.buf = appendRow(wt.buf, r)
			wt.pos, wt.told = r.Seq, r.Seq
		}
		page.Rows[i] = store.Row{} // encoded: a stalled write need not hold it
		if err := wt.flushFull(); err != nil {
			return false, err
		}
	}
	wt.pos = max(wt.pos, page.Cursor)
	wt.bookmark()
	if err := wt.flush(); err != nil {
		return false, err
	}
	wt.batch = min(2*wt.batch, wt.h.opts.CatchUpBatch)
	return page.Cursor >= page.Head, nil
}

// consume buffers the rows of a fan-out batch the watcher has not seen
// and its filter selects (reading a row's commit when the filter needs it
// to judge the row). The evaluation budget restarts per batch.
func (wt *watcher) consume(ctx context.Context, items []item) error {
	wt.resetBudget(ctx)
	for i := range items {
		it := &items[i]
		if it.row.Seq <= wt.pos {
			continue
		}
		ok, err := wt.h.log.Admit(ctx, wt.space, &it.row, &wt.f)
		if err != nil {
			return err
		}
		wt.pos = it.row.Seq
		if ok {
			wt.buf = append(wt.buf, it.line...)
			wt.told = wt.pos
		}
		if err := wt.budgetErr(); err != nil {
			return err
		}
		if err := wt.flushFull(); err != nil {
			return err
		}
	}
	return nil
}

func (wt *watcher) resetBudget(ctx context.Context) {
	if wt.b != nil {
		wt.b.Reset(ctx)
	}
}

func (wt *watcher) budgetErr() error {
	if wt.b == nil {
		return nil
	}
	return wt.b.Err()
}

// bookmark adds a progress bookmark when rows were consumed but not sent.
func (wt *watcher) bookmark() {
	if wt.pos > wt.told {
		wt.buf = appendBookmark(wt.buf, wt.pos)
		wt.told = wt.pos
	}
}

// writeError is a failure to write to the client: the stream is gone.
// stalled says the write ran out of its deadline (the client stopped
// reading) rather than failing outright.
type writeError struct {
	err     error
	stalled bool
}

func (e *writeError) Error() string { return "write stream: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

func newWriteError(err error) *writeError {
	var ne net.Error
	return &writeError{err: err, stalled: errors.As(err, &ne) && ne.Timeout()}
}

// stallFrame is the terminal frame of a stream whose client stopped
// reading for timeout.
func stallFrame(timeout time.Duration) []byte {
	return appendError(nil, problem.New(problem.Unavailable,
		"the client read nothing for %s: the stream ends; resume from the last seq or bookmark", timeout).With("reason", "slow_consumer"))
}

// flushFull flushes once the buffered lines reach MaxBuffer, so that a
// stream never holds more than about that much for a client that does
// not read.
func (wt *watcher) flushFull() error {
	if len(wt.buf) < wt.h.opts.MaxBuffer {
		return nil
	}
	return wt.flush()
}

// flush writes and flushes the buffered lines, after what a direct write
// left unsent, and restarts the heartbeat.
func (wt *watcher) flush() error {
	if len(wt.buf) == 0 && !wt.short {
		return nil
	}
	wt.short = false
	wt.h.writing.Add(1)
	err := wt.sink.write(wt.buf)
	wt.h.writing.Add(-1)
	wt.buf = wt.buf[:0]
	if cap(wt.buf) > maxIdleBuf {
		wt.buf = nil
	}
	wt.timer.Reset(wt.h.opts.Heartbeat)
	if err != nil {
		return newWriteError(err)
	}
	return nil
}

// end writes the terminal frame err calls for, if the client is still
// there to read it.
func (wt *watcher) end(ctx context.Context, err error) {
	var we *writeError
	if errors.As(err, &we) {
		if we.stalled {
			wt.h.stalls.Add(1)
			wt.sink.abort(stallFrame(wt.h.opts.WriteTimeout))
		}
		return
	}
	if ctx.Err() != nil {
		return
	}
	pe := terminal(err)
	if pe.Code == problem.Internal {
		wt.h.opts.Logger.ErrorContext(ctx, "watch stream failed", "space", wt.space, "pos", wt.pos, "err", err)
	}
	wt.buf = appendError(wt.buf[:0], pe)
	_ = wt.flush()
}

// terminal maps the error that ended a stream onto the problem catalogue.
func terminal(err error) *problem.Error {
	var (
		pe *problem.Error
		hu *changelog.HistoryUnavailableError
	)
	switch {
	case errors.Is(err, errShutdown):
		return problem.New(problem.Unavailable, "the server is shutting down; resume from the last seq or bookmark")
	case errors.As(err, &pe):
		return pe
	case changelog.StoreUnavailable(err) != nil:
		return changelog.StoreUnavailable(err)
	case errors.As(err, &hu):
		return problem.New(problem.Compacted, "%s", hu.Error()).With("horizon", hu.Horizon)
	default:
		return problem.New(problem.Internal, "internal error")
	}
}
