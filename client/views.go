package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/eddy-run/eddy/views"
)

// View is a saved view as the API shows it: its name, spec (version,
// types, filter, fields), filter signature and update time.
type View = views.View

// ViewContext identifies the exact view a page belongs to (space, view,
// version, filter signature, schema and epoch).
type ViewContext = views.Context

// BootstrapOpened answers OpenBootstrap: the bootstrap's context and the
// token of its first page.
type BootstrapOpened = views.Opened

// BootstrapPage is one page of a view bootstrap; only the last carries
// the Cursor to follow the view's delta from.
type BootstrapPage = views.BootstrapPage

// DeltaPage is one page of a view's delta.
type DeltaPage = views.DeltaPage

// ViewBacktestResult answers BacktestView.
type ViewBacktestResult = views.BacktestResult

// PutView stores the view name (admin); def is anything that encodes to
// a view definition. created reports a new view (201). Replacing a view
// with itself changes nothing, so the call is retried like a GET.
func (s *Space) PutView(ctx context.Context, name string, def any) (v View, created bool, err error) {
	cl := send(http.MethodPut, s.path("views", name), def)
	cl.retry = true
	ans, err := s.c.callJSON(ctx, cl, &v)
	if err != nil {
		return View{}, false, err
	}
	return v, ans.status == http.StatusCreated, nil
}

// GetView returns the view name (not_found when there is none, or the
// token may not read every type it touches).
func (s *Space) GetView(ctx context.Context, name string) (View, error) {
	var v View
	_, err := s.c.callJSON(ctx, get(s.path("views", name), nil), &v)
	return v, err
}

// Views returns the space's views the token may read.
func (s *Space) Views(ctx context.Context) ([]View, error) {
	var out struct {
		Views []View `json:"views"`
	}
	_, err := s.c.callJSON(ctx, get(s.path("views"), nil), &out)
	return out.Views, err
}

// DeleteView removes the view name (admin); its cursors stop working.
func (s *Space) DeleteView(ctx context.Context, name string) error {
	_, err := s.c.do(ctx, send(http.MethodDelete, s.path("views", name), nil))
	return err
}

// BootstrapParams open a view bootstrap.
type BootstrapParams struct {
	// PageSize is the records per page, 1 to 1000 (0: the server's
	// default).
	PageSize int `json:"pageSize,omitempty"`
	// Strategy is "frozen" (the default: pages are materialized, so a
	// retried page is identical) or "keyset".
	Strategy string `json:"strategy,omitempty"`
	// At snapshots the view as of this retained seq (nil: the head).
	At *int64 `json:"at,omitempty"`
}

// OpenBootstrap opens a bootstrap of the view name.
func (s *Space) OpenBootstrap(ctx context.Context, name string, p BootstrapParams) (BootstrapOpened, error) {
	var op BootstrapOpened
	_, err := s.c.callJSON(ctx, send(http.MethodPost, s.path("views", name, "bootstrap"), p), &op)
	return op, err
}

// BootstrapPage reads the bootstrap page token names; reading a page
// again answers the same page.
func (s *Space) BootstrapPage(ctx context.Context, name, token string) (BootstrapPage, error) {
	var page BootstrapPage
	_, err := s.c.callJSON(ctx, get(s.path("views", name, "bootstrap", token), nil), &page)
	return page, err
}

// Delta reads the view's changes after cursor, at most budget source
// commits (0: the server's default). A cursor that no longer holds is a
// reset_required *Error whose Reason says why.
func (s *Space) Delta(ctx context.Context, name, cursor string, budget int) (DeltaPage, error) {
	q := url.Values{"cursor": {cursor}}
	if budget > 0 {
		q.Set("budget", strconv.Itoa(budget))
	}
	var page DeltaPage
	_, err := s.c.callJSON(ctx, get(s.path("views", name, "delta"), q), &page)
	return page, err
}

// ViewBacktestParams bound a view backtest.
type ViewBacktestParams struct {
	From       int64 `json:"from"`
	To         int64 `json:"to,omitempty"`
	Samples    int   `json:"samples,omitempty"`
	MaxCommits int   `json:"maxCommits,omitempty"`
	// Sizes asks for the view's size at From (nil: the server's default).
	Sizes *bool `json:"sizes,omitempty"`
	// Definition, if set, is a proposed view definition judged under the
	// name without saving it.
	Definition json.RawMessage `json:"definition,omitempty"`
}

// BacktestView judges the commits (From, To] against the saved view, or
// a proposed definition (admin); it writes nothing, so it is retried
// like a GET.
func (s *Space) BacktestView(ctx context.Context, name string, p ViewBacktestParams) (ViewBacktestResult, error) {
	cl := send(http.MethodPost, s.path("views", name, "backtest"), p)
	cl.retry = true
	var r ViewBacktestResult
	_, err := s.c.callJSON(ctx, cl, &r)
	return r, err
}

// RotateEpoch gives the space a new epoch (admin): every view cursor and
// bootstrap token of it then answers reset_required (epoch_changed).
func (s *Space) RotateEpoch(ctx context.Context) (SpaceInfo, error) {
	var info SpaceInfo
	_, err := s.c.callJSON(ctx, send(http.MethodPost, s.path("rotate-epoch"), nil), &info)
	return info, err
}

// ViewStream is one live view stream (GET .../views/{view}/delta?watch=1):
// delta frames as commits land. It does not resume by itself: after an
// error, open a new stream from the last frame's Cursor. Read it from
// one goroutine; Close may be called from any.
type ViewStream struct {
	s *stream
}

// ViewStreamOptions tune a live view stream.
type ViewStreamOptions struct {
	// Budget is the source commits per frame (0: the server's default).
	Budget int
	// IdleTimeout ends the stream with ErrIdle when nothing, not even a
	// heartbeat, arrives for this long (default DefaultIdleTimeout;
	// negative: never).
	IdleTimeout time.Duration
	// HeaderTimeout bounds the wait for the answer (default
	// DefaultHeaderTimeout; negative: unbounded).
	HeaderTimeout time.Duration
}

// WatchView opens the live stream of the view name after cursor. An
// error answer (reset_required, not_found, ...) is returned here.
func (s *Space) WatchView(ctx context.Context, name, cursor string, o ViewStreamOptions) (*ViewStream, error) {
	q := url.Values{"cursor": {cursor}, "watch": {"1"}}
	if o.Budget > 0 {
		q.Set("budget", strconv.Itoa(o.Budget))
	}
	t := streamTimeouts{header: o.HeaderTimeout, idle: o.IdleTimeout}
	for _, d := range []*time.Duration{&t.header, &t.idle} {
		if *d < 0 {
			*d = 0
		}
	}
	if o.IdleTimeout == 0 {
		t.idle = DefaultIdleTimeout
	}
	if o.HeaderTimeout == 0 {
		t.header = DefaultHeaderTimeout
	}
	st, err := s.c.openStream(ctx, get(s.path("views", name, "delta"), q), t)
	if err != nil {
		return nil, err
	}
	return &ViewStream{s: st}, nil
}

// Next returns the next frame and its line as the server sent it. A
// heartbeat is a frame with an empty Cursor. A terminal {"error": ...}
// frame is returned as its *Error; the end of the stream as
// ErrStreamEnded (or ErrIdle).
func (v *ViewStream) Next() (DeltaPage, []byte, error) {
	line, err := v.s.line()
	if err != nil {
		return DeltaPage{}, nil, err
	}
	var f struct {
		DeltaPage
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &f); err != nil {
		return DeltaPage{}, nil, badFrame(line, err.Error())
	}
	if f.Error != nil {
		return DeltaPage{}, line, problemOf(0, nil, line)
	}
	return f.DeltaPage, line, nil
}

// Close ends the stream and releases its connection.
func (v *ViewStream) Close() { v.s.close() }
