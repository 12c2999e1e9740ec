package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/views"
)

// View sync shapes (DESIGN.md section 8), shared with the server.
type (
	// ViewContext binds a view's pages and cursors to its space, view,
	// filter version and signature, schema version and epoch; its
	// Fingerprint hashes them.
	ViewContext = views.Context
	// ViewChange is one projected change: upsert (with the record),
	// removed_from_scope or deleted, each with the canonical version.
	ViewChange = views.Change
	// ViewCommit is one source commit of a delta page.
	ViewCommit = views.Commit
	// DeltaPage is one page of a view's delta.
	DeltaPage = views.DeltaPage
	// BootstrapPage is one page of a bootstrap.
	BootstrapPage = views.BootstrapPage
	// ResetReason is why a view must be reset (details.reason).
	ResetReason = views.Reason
	// ViewDefinition is a saved view as the server shows it.
	ViewDefinition = views.View
)

// Bootstrap strategies.
const (
	// Frozen materializes the view when the bootstrap opens; every retry
	// of a page answers the same records (the default).
	Frozen = "frozen"
	// Keyset pages by entity id with stateless tokens.
	Keyset = "keyset"
)

// ResetError is a 409 reset_required answer (or a stream's terminal
// reset_required frame): the cursor or token no longer holds and the
// client must reset as Reason says. It wraps the server's *Error.
type ResetError struct {
	// Reason is details.reason: views.ViewChanged, views.EpochChanged, ...
	Reason ResetReason
	// Err is the server's problem.
	Err *Error
}

// Error implements error.
func (e *ResetError) Error() string {
	return "reset required (" + string(e.Reason) + "): " + e.Err.Message
}

// Unwrap returns the server's problem.
func (e *ResetError) Unwrap() error { return e.Err }

// DiscardsSpace reports whether the reset invalidates everything the
// client holds of the space (a rotated epoch or pruned history), rather
// than one view's state.
func (e *ResetError) DiscardsSpace() bool {
	return e.Reason == views.EpochChanged || e.Reason == views.HistoryPruned || e.Reason == views.CursorAhead
}

// AsReset returns the *ResetError in err's chain, if any.
func AsReset(err error) (*ResetError, bool) {
	var re *ResetError
	ok := errors.As(err, &re)
	return re, ok
}

// resetOf wraps a reset_required problem as a *ResetError.
func resetOf(e *Error) error {
	if e.Code != problem.ResetRequired {
		return e
	}
	return &ResetError{Reason: ResetReason(e.Reason), Err: e}
}

// viewError turns reset answers of a view call into *ResetError.
func viewError(err error) error {
	var e *Error
	if errors.As(err, &e) && e.Code == problem.ResetRequired {
		if _, already := AsReset(err); !already {
			return resetOf(e)
		}
	}
	return err
}

// View returns the handle of one view of the space. It sends nothing.
func (s *Space) View(name string) *View { return &View{sp: s, name: name} }

// View is the handle of one view of a space.
type View struct {
	sp   *Space
	name string
}

// Name returns the view's name.
func (v *View) Name() string { return v.name }

// Space returns the space handle the view belongs to.
func (v *View) Space() *Space { return v.sp }

func (v *View) path(segs ...string) string {
	return v.sp.path(append([]string{"views", v.name}, segs...)...)
}

// Put saves the view's definition (PUT .../views/{view}, admin); def is
// the JSON object of DESIGN.md section 8 ({"version", "types",
// "filter", "fields"?}). It reports whether the view was created.
func (v *View) Put(ctx context.Context, def any) (ViewDefinition, bool, error) {
	var out ViewDefinition
	ans, err := v.sp.c.callJSON(ctx, send(http.MethodPut, v.path(), def), &out)
	if err != nil {
		return ViewDefinition{}, false, err
	}
	return out, ans.status == http.StatusCreated, nil
}

// Get returns the view's definition.
func (v *View) Get(ctx context.Context) (ViewDefinition, error) {
	var out ViewDefinition
	_, err := v.sp.c.callJSON(ctx, get(v.path(), nil), &out)
	return out, err
}

// Delete deletes the view (admin).
func (v *View) Delete(ctx context.Context) error {
	_, err := v.sp.c.do(ctx, send(http.MethodDelete, v.path(), nil))
	return err
}

// BootstrapOptions open a bootstrap; every field is optional.
type BootstrapOptions struct {
	// PageSize is the records per page (server default when 0).
	PageSize int `json:"pageSize,omitempty"`
	// Strategy is Frozen (default) or Keyset.
	Strategy string `json:"strategy,omitempty"`
	// At snapshots the view as of a retained seq (default: the head).
	At *int64 `json:"at,omitempty"`
}

// Opened answers Open: the view's context and the first page's token.
type Opened = views.Opened

// Open opens a bootstrap (POST .../views/{view}/bootstrap).
func (v *View) Open(ctx context.Context, o BootstrapOptions) (Opened, error) {
	var out Opened
	_, err := v.sp.c.callJSON(ctx, send(http.MethodPost, v.path("bootstrap"), o), &out)
	if err != nil {
		return Opened{}, viewError(err)
	}
	return out, nil
}

// Page fetches one bootstrap page by its token (GET
// .../bootstrap/{token}). Retrying a token is safe. A token that no
// longer holds is a *ResetError.
func (v *View) Page(ctx context.Context, token string) (BootstrapPage, error) {
	var out BootstrapPage
	if token == "" {
		return out, errors.New("client: empty bootstrap token")
	}
	_, err := v.sp.c.callJSON(ctx, get(v.path("bootstrap", token), nil), &out)
	if err != nil {
		return BootstrapPage{}, viewError(err)
	}
	return out, nil
}

// Bootstrap opens a bootstrap and calls fn with every page in order,
// until the complete page (whose Cursor is where the delta continues) or
// fn's first error.
func (v *View) Bootstrap(ctx context.Context, o BootstrapOptions, fn func(BootstrapPage) error) error {
	op, err := v.Open(ctx, o)
	if err != nil {
		return err
	}
	token := op.Token
	for {
		p, err := v.Page(ctx, token)
		if err != nil {
			return err
		}
		if err := fn(p); err != nil {
			return err
		}
		if p.Complete || p.NextToken == nil {
			return nil
		}
		token = *p.NextToken
	}
}

// Delta fetches the delta page after cursor, reading at most budget
// source commits (0: the server's default). Retrying a cursor answers
// the same commits again. A cursor that no longer holds is a
// *ResetError.
func (v *View) Delta(ctx context.Context, cursor string, budget int) (DeltaPage, error) {
	q := url.Values{"cursor": {cursor}}
	if budget > 0 {
		q.Set("budget", strconv.Itoa(budget))
	}
	var out DeltaPage
	_, err := v.sp.c.callJSON(ctx, get(v.path("delta"), q), &out)
	if err != nil {
		return DeltaPage{}, viewError(err)
	}
	return out, nil
}

// ViewStreamOptions tune a live view stream.
type ViewStreamOptions struct {
	// Budget is the commits per page (0: the server's default).
	Budget int
	// IdleTimeout ends the stream when nothing, not even a heartbeat,
	// arrives for this long (default DefaultIdleTimeout; negative: never).
	IdleTimeout time.Duration
	// HeaderTimeout bounds the wait for the stream's answer (default
	// DefaultHeaderTimeout; negative: unbounded).
	HeaderTimeout time.Duration
}

// ViewStream is a live view stream (GET .../delta?watch=1): delta pages as
// commits land, and progress. It does not resume by itself: a client
// applies each page and reopens from the last cursor it stored. It is not
// safe for concurrent use, except Close.
type ViewStream struct {
	s   *stream
	ctx ViewContext
	pos string
}

// Watch opens the live view stream after cursor. The context of the
// view (which the stream's pages do not repeat) is given by the caller,
// from the page that issued cursor: every page Next returns carries it.
func (v *View) Watch(ctx context.Context, vc ViewContext, cursor string, o ViewStreamOptions) (*ViewStream, error) {
	q := url.Values{"cursor": {cursor}, "watch": {"1"}}
	if o.Budget > 0 {
		q.Set("budget", strconv.Itoa(o.Budget))
	}
	t := streamTimeouts{header: o.HeaderTimeout, idle: o.IdleTimeout}
	if t.header == 0 {
		t.header = DefaultHeaderTimeout
	}
	if t.idle == 0 {
		t.idle = DefaultIdleTimeout
	}
	t.header, t.idle = max(t.header, 0), max(t.idle, 0)
	s, err := v.sp.c.openStream(ctx, get(v.path("delta"), q), t)
	if err != nil {
		return nil, viewError(err)
	}
	return &ViewStream{s: s, ctx: vc, pos: cursor}, nil
}

// ViewEvent is one event of a live view stream: a Page, or a heartbeat
// (no page). A progress frame (only irrelevant commits passed) arrives
// as a page without commits from the previous position to the new one.
type ViewEvent struct {
	// Page is set for every frame that moves the cursor; its Context is
	// the stream's.
	Page *DeltaPage
	// Cursor is the position after the event.
	Cursor string
}

// viewFrame is one line of a live view stream.
type viewFrame struct {
	PreviousCursor *string          `json:"previousCursor"`
	Cursor         *string          `json:"cursor"`
	Commits        []ViewCommit     `json:"commits"`
	Acks           map[string]int64 `json:"acks"`
	Error          json.RawMessage  `json:"error"`
}

// Next returns the next event. Its error ends the stream: a
// *ResetError (a terminal reset frame), another *Error (a terminal
// frame), ErrIdle, ErrStreamEnded, ErrBadFrame, or the read error.
func (vs *ViewStream) Next() (ViewEvent, error) {
	line, err := vs.s.line()
	if err != nil {
		return ViewEvent{}, err
	}
	var f viewFrame
	if err := json.Unmarshal(line, &f); err != nil {
		return ViewEvent{}, badFrame(line, "not a view stream frame")
	}
	switch {
	case f.Error != nil:
		e := problemOf(0, nil, append(append([]byte(`{"error":`), f.Error...), '}'))
		return ViewEvent{}, resetOf(e)
	case f.PreviousCursor != nil && f.Cursor != nil:
		p := &DeltaPage{Context: vs.ctx, PreviousCursor: *f.PreviousCursor, Cursor: *f.Cursor,
			Commits: f.Commits, Acks: f.Acks}
		if p.Commits == nil {
			p.Commits = []ViewCommit{}
		}
		vs.pos = p.Cursor
		return ViewEvent{Page: p, Cursor: p.Cursor}, nil
	case f.Cursor != nil:
		// A progress frame: only irrelevant commits passed. It is
		// handed on as an empty page from the last position, so a
		// client that stores cursors page by page stays continuous.
		p := &DeltaPage{Context: vs.ctx, PreviousCursor: vs.pos, Cursor: *f.Cursor, Commits: []ViewCommit{}}
		vs.pos = p.Cursor
		return ViewEvent{Page: p, Cursor: p.Cursor}, nil
	}
	return ViewEvent{Cursor: vs.pos}, nil // heartbeat or a frame this client does not know
}

// Close ends the stream. It is safe from any goroutine, more than once.
func (vs *ViewStream) Close() error {
	vs.s.close()
	return nil
}

// String names the stream for messages.
func (vs *ViewStream) String() string {
	return fmt.Sprintf("view stream %s/%s", vs.ctx.Space, vs.ctx.View)
}

// Views lists the views the token may read (GET .../views).
func (s *Space) Views(ctx context.Context) ([]ViewDefinition, error) {
	var out struct {
		Views []ViewDefinition `json:"views"`
	}
	_, err := s.c.callJSON(ctx, get(s.path("views"), nil), &out)
	return out.Views, err
}

// RotateEpoch rotates the space's epoch (admin): every view cursor and
// bootstrap of the space then answers reset_required epoch_changed.
func (s *Space) RotateEpoch(ctx context.Context) (SpaceInfo, error) {
	var out SpaceInfo
	_, err := s.c.callJSON(ctx, send(http.MethodPost, s.path("rotate-epoch"), nil), &out)
	return out, err
}
