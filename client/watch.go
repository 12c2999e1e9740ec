package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/problem"
)

// FromHead is the WatchOptions.From that starts at the space's head:
// only rows committed from now on.
const FromHead = -1

// Defaults of WatchOptions.
const (
	// DefaultIdleTimeout is how long a watch waits for a line (the
	// server sends a heartbeat every 15s by default) before it presumes
	// the connection dead and resumes.
	DefaultIdleTimeout = time.Minute
	// DefaultHeaderTimeout bounds the wait for a watch's answer.
	DefaultHeaderTimeout = 30 * time.Second
	// DefaultMinBackoff and DefaultMaxBackoff bound the wait before a
	// dropped watch reconnects (exponential, with jitter).
	DefaultMinBackoff = 250 * time.Millisecond //nolint:revive // Min is minimum
	DefaultMaxBackoff = 10 * time.Second
)

// WatchOptions select a watch.
type WatchOptions struct {
	// From is the position to resume after (exclusive; 0 replays from the
	// beginning, a list's Head continues a listing); FromHead (any
	// negative) starts at the head.
	From int64
	// Type watches one collection (GET .../entities/{type}?watch=1)
	// instead of the whole changelog; Filter.Types must then be empty.
	Type string
	// Filter selects the rows sent; rows it drops are covered by
	// progress bookmarks.
	Filter Filter
	// IdleTimeout (default DefaultIdleTimeout; negative: never) resumes
	// a stream on which nothing arrived for this long.
	IdleTimeout time.Duration
	// HeaderTimeout (default DefaultHeaderTimeout; negative: never)
	// bounds the wait for each (re)connection's answer.
	HeaderTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a reconnection
	// (defaults DefaultMinBackoff and DefaultMaxBackoff). A 429 or 503
	// answer's Retry-After is waited out when it is longer.
	MinBackoff, MaxBackoff time.Duration
	// OnDrop, if set, is called (in the goroutine calling Next) each time
	// the stream is lost or a reconnection fails, before the wait.
	OnDrop func(Drop)
	// OnResume, if set, is called (in the goroutine calling Next) when a
	// reconnection succeeded, with the position it resumed from.
	OnResume func(from int64)
	// OnControl, if set, is called (in the goroutine calling Next) with
	// each control frame's line as the server sent it (bookmarks, moving
	// or not, heartbeats, a terminal error, frames this client does not
	// know), for tools that pass a stream through. Row events then also
	// carry their line in Event.Raw. The line is only valid during the
	// call.
	OnControl func(line []byte)
}

// Drop describes a lost stream, for WatchOptions.OnDrop.
type Drop struct {
	// Err is why the stream ended, or why reconnecting failed.
	Err error
	// From is where the watch resumes (FromHead before any frame).
	From int64
	// Wait is how long the watch waits before reconnecting.
	Wait time.Duration
	// Attempt counts the reconnections since the last healthy stream
	// (1 for the first).
	Attempt int
}

// EventKind is what a watch Event carries.
type EventKind uint8

// Event kinds.
const (
	// EventRow is a change row.
	EventRow EventKind = iota + 1
	// EventBookmark is a position: the stream's opening bookmark (the
	// first event of a watch), or progress over rows consumed but not
	// sent. Save it like a row's seq.
	EventBookmark
	// EventHeartbeat says the stream is alive and idle.
	EventHeartbeat
)

// String names the kind.
func (k EventKind) String() string {
	switch k {
	case EventRow:
		return "row"
	case EventBookmark:
		return "bookmark"
	case EventHeartbeat:
		return "heartbeat"
	}
	return "unknown"
}

// Event is one thing a watch saw.
type Event struct {
	Kind EventKind
	// Row is the change row of an EventRow.
	Row Row
	// Position is the watch's position after the event: the row's seq or
	// the bookmark. A consumer that saved it resumes with From =
	// Position and misses nothing and repeats nothing.
	Position int64
	// Raw is a row's line as the server sent it, when
	// WatchOptions.OnControl is set (nil otherwise).
	Raw []byte
}

// Watcher is a watch stream that resumes by itself: when the connection
// drops, the server ends the stream with a resumable terminal frame
// (unavailable, rate_limited, internal) or goes silent past the idle
// timeout, it reconnects from its position (the last row or bookmark
// seen) after a backoff, and skips any row at or below that position,
// so every row arrives once, in seq order. A position below the horizon
// ends it with a *CompactedError; other client errors (bad_request,
// unauthorized, forbidden, not_found) end it with their *Error.
//
// A Watcher is read from one goroutine (Next); Close may be called from
// any.
type Watcher struct {
	sp     *Space
	o      WatchOptions
	ctx    context.Context
	cancel context.CancelCauseFunc
	path   string
	query  url.Values

	s        *stream // the open stream; nil between connections
	opened   bool    // s has not sent its opening bookmark yet
	first    bool    // no frame has been seen on any stream yet
	pos      int64   // the last row or bookmark seen; FromHead before any
	attempt  int     // reconnections since the last healthy stream
	rows     int     // rows on the current stream
	openedAt time.Time
	pending  error // why the last stream or reconnection failed
	err      error // the final error, once there is one
}

// Watch opens a watch stream and returns once the server accepted it:
// an error answer to the first request (a bad filter, a position above
// the head or below the horizon, a bad token, an unreachable server) is
// returned here and nothing is retried. From then on Next resumes by
// itself until ctx ends, Close is called or a final error arrives.
func (s *Space) Watch(ctx context.Context, o WatchOptions) (*Watcher, error) {
	o = o.withDefaults()
	w := &Watcher{sp: s, o: o, pos: max(o.From, FromHead), first: true, query: url.Values{"watch": {"1"}}}
	w.path = s.path("changes")
	if o.Type != "" {
		w.path = s.path("entities", o.Type)
	}
	o.Filter.set(w.query)
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	if err := w.connect(); err != nil {
		w.cancel(nil)
		return nil, err
	}
	return w, nil
}

func (o WatchOptions) withDefaults() WatchOptions {
	def := func(v *time.Duration, d time.Duration) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = 0
		}
	}
	def(&o.IdleTimeout, DefaultIdleTimeout)
	def(&o.HeaderTimeout, DefaultHeaderTimeout)
	def(&o.MinBackoff, DefaultMinBackoff)
	def(&o.MaxBackoff, DefaultMaxBackoff)
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	return o
}

// Position returns the last row seq or bookmark seen (FromHead before
// the first frame of a watch from the head).
func (w *Watcher) Position() int64 { return w.pos }

// Close ends the watch; Next then returns ErrClosed. It is safe to call
// from any goroutine, more than once.
func (w *Watcher) Close() error {
	w.cancel(ErrClosed)
	return nil
}

// Next returns the next event, resuming across drops. Its error is
// final: ctx's error, ErrClosed, a *CompactedError, or an *Error the
// server will answer again on every retry.
func (w *Watcher) Next() (Event, error) {
	for {
		if w.err != nil {
			return Event{}, w.err
		}
		if w.s == nil {
			if err := w.reconnect(); err != nil {
				w.fail(err)
			}
			continue
		}
		ev, ok, err := w.read()
		if err != nil {
			w.lost(err)
			continue
		}
		if ok {
			return ev, nil
		}
	}
}

// read reads one frame: an event to return (ok), nothing to return (a
// duplicate row, a bookmark that does not move, an unknown frame), or
// the error that ended the stream.
func (w *Watcher) read() (ev Event, ok bool, err error) {
	line, err := w.s.line()
	if err != nil {
		return Event{}, false, err
	}
	f, err := decodeFrame(line)
	if err != nil {
		w.fail(err) // a server that sends garbage would send it again
		return Event{}, false, nil
	}
	opening := w.opened
	w.opened = false
	if f.kind != frameRow && w.o.OnControl != nil {
		w.o.OnControl(line)
	}
	switch f.kind {
	case frameRow:
		if f.row.Seq <= w.pos {
			return Event{}, false, nil
		}
		w.pos, w.first = f.row.Seq, false
		w.rows++
		ev := Event{Kind: EventRow, Row: f.row, Position: w.pos}
		if w.o.OnControl != nil {
			ev.Raw = append([]byte(nil), line...)
		}
		return ev, true, nil
	case frameBookmark:
		emit := f.bookmark > w.pos || (opening && w.first)
		w.pos, w.first = max(w.pos, f.bookmark), false
		return Event{Kind: EventBookmark, Position: w.pos}, emit, nil
	case frameHeartbeat:
		return Event{Kind: EventHeartbeat, Position: w.pos}, true, nil
	case frameError:
		return Event{}, false, classify(f.err, w.pos)
	}
	return Event{}, false, nil
}

// connect opens a stream from the position.
func (w *Watcher) connect() error {
	q := cloneValues(w.query)
	if w.pos >= 0 {
		q.Set("from", strconv.FormatInt(w.pos, 10))
	}
	cl := get(w.path, q)
	cl.from = w.pos
	s, err := w.sp.c.openStream(w.ctx, cl, streamTimeouts{header: w.o.HeaderTimeout, idle: w.o.IdleTimeout})
	if err != nil {
		return err
	}
	w.s, w.opened, w.rows, w.openedAt = s, true, 0, time.Now()
	return nil
}

// lost closes a stream that ended with err: final errors end the watch,
// others are resumed by the next reconnect.
func (w *Watcher) lost(err error) {
	healthy := w.rows > 0 || time.Since(w.openedAt) >= w.o.MaxBackoff
	w.s.close()
	w.s = nil
	if healthy {
		w.attempt = 0
	}
	if w.ctx.Err() != nil || final(err) {
		w.fail(err)
		return
	}
	w.pending = err
}

// reconnect waits out the backoff after the last failure and connects.
// It returns only final errors; a failed attempt that may be retried is
// reported to OnDrop and retried by the next call.
func (w *Watcher) reconnect() error {
	w.attempt++
	wait := functions.Backoff(w.attempt, w.o.MinBackoff, w.o.MaxBackoff, nil)
	var e *Error
	if errors.As(w.pending, &e) {
		wait = max(wait, e.RetryAfter)
	}
	if w.o.OnDrop != nil {
		w.o.OnDrop(Drop{Err: w.pending, From: w.pos, Wait: wait, Attempt: w.attempt})
	}
	t := time.NewTimer(wait)
	select {
	case <-w.ctx.Done():
		t.Stop()
		return context.Cause(w.ctx)
	case <-t.C:
	}
	err := w.connect()
	if err == nil {
		w.pending = nil
		if w.o.OnResume != nil {
			w.o.OnResume(w.pos)
		}
		return nil
	}
	if w.ctx.Err() != nil || final(err) {
		return err
	}
	w.pending = err
	return nil
}

// fail ends the watch with err (or the context's cause when it ended).
func (w *Watcher) fail(err error) {
	if w.s != nil {
		w.s.close()
		w.s = nil
	}
	if cause := context.Cause(w.ctx); cause != nil {
		err = cause
	}
	w.err = err
	w.cancel(err)
}

// final reports whether err ends a watch rather than being resumed: a
// compacted position, and client errors the server would answer again
// (4xx other than 408 and 429, by status or, for a terminal frame, by
// the status its code maps to). Network failures, idle streams, 5xx and
// unknown codes are resumed.
func final(err error) bool {
	var ce *CompactedError
	if errors.As(err, &ce) {
		return true
	}
	var e *Error
	if !errors.As(err, &e) {
		return errors.Is(err, ErrFrameTooLong)
	}
	status := e.Status
	if status == 0 {
		status = problem.Status(e.Code)
	}
	return status >= 400 && status < 500 && status != http.StatusTooManyRequests && status != http.StatusRequestTimeout
}

// cloneValues returns a copy of q.
func cloneValues(q url.Values) url.Values {
	c := make(url.Values, len(q)+1)
	for k, vs := range q {
		c[k] = append([]string(nil), vs...)
	}
	return c
}
