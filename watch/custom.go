package watch

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/eddy-run/eddy/problem"
)

// Streams of other packages (view sync's live view streams) ride on the
// hub too: Subscribe hears the same commit wake-ups the hub's own space
// hubs do, in-process and from other processes, and ServeFunc gives a
// stream the hub's transport (the taken-over HTTP/1.1 connection, write
// deadlines, the terminal frame) and its lifecycle (Stop ends it with the
// terminal unavailable frame and waits for it).

// ErrStopping is what a StreamFunc returns when Stream.Stopping fires: the
// stream then ends with the terminal unavailable frame.
var ErrStopping = errShutdown

// subscribers are the wake-up channels of Subscribe, by space.
type subscribers struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{} // guarded by mu
}

// Subscribe returns a channel that receives a wake-up whenever the hub
// hears of new commits to space (and of possibly missed ones, after the
// store's listener reconnects), and a function that ends the
// subscription. Sends never block: a wake-up that finds one pending is
// dropped, so a subscriber re-reads everything new after each receive.
func (h *Hub) Subscribe(space string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.subs.mu.Lock()
	defer h.subs.mu.Unlock()
	if h.subs.subs == nil {
		h.subs.subs = map[string]map[chan struct{}]struct{}{}
	}
	if h.subs.subs[space] == nil {
		h.subs.subs[space] = map[chan struct{}]struct{}{}
	}
	h.subs.subs[space][ch] = struct{}{}
	return ch, func() {
		h.subs.mu.Lock()
		defer h.subs.mu.Unlock()
		delete(h.subs.subs[space], ch)
		if len(h.subs.subs[space]) == 0 {
			delete(h.subs.subs, space)
		}
	}
}

// wake pokes the subscribers of space, or of every space for "".
func (s *subscribers) wake(space string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sp, chans := range s.subs {
		if space != "" && sp != space {
			continue
		}
		for ch := range chans {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// Stream is the transport of a stream served by ServeFunc.
type Stream struct {
	h    *Hub
	sink sink
}

// StreamFunc feeds a stream until it fails, its client leaves (ctx ends
// or a write fails) or the hub stops (it returns ErrStopping).
type StreamFunc func(ctx context.Context, s *Stream) error

// Write writes and flushes lines (each ending in a newline).
func (s *Stream) Write(lines []byte) error {
	if err := s.sink.write(lines); err != nil {
		return newWriteError(err)
	}
	return nil
}

// Stopping is closed when the hub begins to stop.
func (s *Stream) Stopping() <-chan struct{} { return s.h.stopping }

// ServeFunc serves an ndjson stream fed by run, counted among the hub's
// watchers. The response head goes out at once. When run returns an
// error other than a failed write or an ended context, the stream ends
// with the terminal {"error": …} frame it maps to (a *problem.Error as
// is; ErrStopping as unavailable). Like Serve, it returns at once for a
// taken-over HTTP/1.1 connection, running run on a goroutine of the hub;
// otherwise it returns when run does. It fails with nothing written, and
// without calling run, only when the hub is stopping or at a stream cap
// (MaxStreams, MaxStreamsPerKey: 429 rate_limited, with Retry-After set
// on w); otherwise run is called exactly once.
func (h *Hub) ServeFunc(w http.ResponseWriter, r *http.Request, run StreamFunc) error {
	key := keyOf(r.Context())
	if err := h.enter(key); err != nil {
		return refuse(w, err)
	}
	hdr := w.Header()
	hdr.Set("Content-Type", ContentType)
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	st := &Stream{h: h}
	if s, ok := hijack(w, r, h.takeover, h.opts.WriteTimeout); ok {
		st.sink = s
		go func() {
			defer h.exit(key)
			st.serve(h.ctx, run)
		}()
		return nil
	}
	defer h.exit(key)
	w.WriteHeader(http.StatusOK)
	st.sink = newResponseSink(w, h.opts.WriteTimeout)
	st.serve(r.Context(), run)
	return nil
}

// serve sends the response head, runs the stream and ends it. run runs
// even when the head cannot be sent (the client is gone), on an ended
// context, so that it always gets to clean up.
func (s *Stream) serve(ctx context.Context, run StreamFunc) {
	defer s.sink.close()
	if err := start(s.sink); err != nil {
		gone, cancel := context.WithCancel(ctx)
		cancel()
		_ = run(gone, s)
		return
	}
	err := run(ctx, s)
	var we *writeError
	if errors.As(err, &we) && we.stalled {
		s.h.stalls.Add(1)
		s.sink.abort(stallFrame(s.h.opts.WriteTimeout))
		return
	}
	if err == nil || we != nil || ctx.Err() != nil {
		return
	}
	pe := terminal(err)
	if pe.Code == problem.Internal {
		s.h.opts.Logger.ErrorContext(ctx, "stream failed", "err", err)
	}
	_ = s.sink.write(appendError(nil, pe))
}

// start sends the response head before any line: a stream may stay
// silent for a while, and its client should see it open at once.
func start(s sink) error {
	switch s := s.(type) {
	case *connSink:
		if t, ok := s.deadline.next(time.Now(), s.timeout); ok {
			_ = s.conn.SetWriteDeadline(t)
		}
		_, err := s.conn.Write(s.head)
		s.head = nil
		return err
	case *responseSink:
		return s.rc.Flush()
	}
	return nil
}
