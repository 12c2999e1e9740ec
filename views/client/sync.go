package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	api "github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/views"
)

// SyncOptions tune Sync and Follow.
type SyncOptions struct {
	// PageSize is the bootstrap page size (0: the server's default).
	PageSize int
	// Strategy is the bootstrap strategy (default api.Frozen).
	Strategy string
	// Budget is the source commits per delta page (0: the server's).
	Budget int
	// OnEvent, if set, is told what happens (for progress and logs).
	OnEvent func(SyncEvent)
	// MaxResets bounds the resets one Sync performs before it gives up
	// (default 5): a view whose definition keeps changing fails loudly.
	MaxResets int
	// MinBackoff and MaxBackoff bound Follow's waits between reconnects
	// (defaults 200ms and 10s).
	MinBackoff, MaxBackoff time.Duration
}

// SyncEventKind is what a SyncEvent reports.
type SyncEventKind int

// Sync event kinds.
const (
	// EventBootstrapPage: a bootstrap page was applied (Records counts
	// the records so far).
	EventBootstrapPage SyncEventKind = iota + 1
	// EventBootstrapped: the bootstrap completed.
	EventBootstrapped
	// EventDelta: a delta or live page was applied.
	EventDelta
	// EventReset: the view was reset for Reason (a view reset, or the
	// whole space's state when Reason calls for it).
	EventReset
	// EventReconnect: a live stream ended (Err) and is reopened.
	EventReconnect
)

// SyncEvent is one step of a sync.
type SyncEvent struct {
	Kind    SyncEventKind
	View    string
	Context views.Context
	// Records is how many records the bootstrap applied so far.
	Records int64
	// Applied is what the page did (pages only).
	Applied Applied
	// Reason is why the view was reset (EventReset); SpaceDiscarded says
	// the whole space's state went with it.
	Reason         views.Reason
	SpaceDiscarded bool
	// Err is why a live stream ended (EventReconnect).
	Err error
}

func (o *SyncOptions) emit(ev SyncEvent) {
	if o.OnEvent != nil {
		o.OnEvent(ev)
	}
}

// progressOf returns the stored progress of a view of a space (under any
// context), if the client holds one.
func (c *MultiViewClient) progressOf(ctx context.Context, space, view string) (Progress, bool, error) {
	vs, err := c.Views(ctx)
	if err != nil {
		return Progress{}, false, err
	}
	for _, p := range vs {
		if p.Context.Space == space && p.Context.View == view {
			return p, true, nil
		}
	}
	return Progress{}, false, nil
}

// Sync brings one view up to date: it bootstraps the view when the
// client holds no cursor for it (an unfinished bootstrap starts over),
// then applies delta pages until the head. A reset answer is performed as
// its reason calls for — ResetView for view_changed, schema_changed and
// the bootstrap reasons; DiscardSpace for epoch_changed, history_pruned
// and cursor_ahead — told through OnEvent, and the view bootstrapped
// again. It returns the view's context.
func (c *MultiViewClient) Sync(ctx context.Context, v *api.View, o SyncOptions) (views.Context, error) {
	if o.MaxResets <= 0 {
		o.MaxResets = 5
	}
	for resets := 0; ; resets++ {
		vc, err := c.syncOnce(ctx, v, &o)
		var re *api.ResetError
		if !errors.As(err, &re) || resets >= o.MaxResets {
			return vc, err
		}
		if err := c.reset(ctx, v, re, &o); err != nil {
			return vc, err
		}
	}
}

// syncOnce bootstraps if need be and catches up.
func (c *MultiViewClient) syncOnce(ctx context.Context, v *api.View, o *SyncOptions) (views.Context, error) {
	space := v.Space().Name()
	p, ok, err := c.progressOf(ctx, space, v.Name())
	if err != nil {
		return views.Context{}, err
	}
	if ok && p.Phase != Streaming {
		if err := c.ResetView(ctx, p.Context); err != nil {
			return views.Context{}, err
		}
		ok = false
	}
	if !ok {
		if p, err = c.bootstrap(ctx, v, o); err != nil {
			return p.Context, err
		}
	}
	for {
		page, err := v.Delta(ctx, p.Cursor, o.Budget)
		if err != nil {
			return p.Context, err
		}
		a, err := c.ApplyDelta(ctx, page)
		if err != nil {
			return p.Context, err
		}
		p.Cursor = page.Cursor
		o.emit(SyncEvent{Kind: EventDelta, View: v.Name(), Context: page.Context, Applied: a})
		if !page.HasMore {
			return page.Context, nil
		}
	}
}

// bootstrap applies a whole bootstrap of v and returns its progress.
func (c *MultiViewClient) bootstrap(ctx context.Context, v *api.View, o *SyncOptions) (Progress, error) {
	strategy := o.Strategy
	if strategy == "" {
		strategy = api.Frozen
	}
	var n int64
	var last views.Context
	err := v.Bootstrap(ctx, api.BootstrapOptions{PageSize: o.PageSize, Strategy: strategy}, func(page api.BootstrapPage) error {
		a, err := c.ApplyBootstrap(ctx, page)
		if err != nil {
			return err
		}
		n += int64(a.Upserts)
		last = page.Context
		o.emit(SyncEvent{Kind: EventBootstrapPage, View: v.Name(), Context: page.Context, Records: n, Applied: a})
		return nil
	})
	if err != nil {
		return Progress{Context: last}, err
	}
	p, ok, err := c.Progress(ctx, last)
	if err == nil && (!ok || p.Phase != Streaming) {
		err = fmt.Errorf("%w: bootstrap of %s ended without its cursor", ErrGap, v.Name())
	}
	o.emit(SyncEvent{Kind: EventBootstrapped, View: v.Name(), Context: last, Records: n})
	return p, err
}

// reset performs the reset re calls for on v's stored state.
func (c *MultiViewClient) reset(ctx context.Context, v *api.View, re *api.ResetError, o *SyncOptions) error {
	space := v.Space().Name()
	ev := SyncEvent{Kind: EventReset, View: v.Name(), Reason: re.Reason}
	if re.DiscardsSpace() {
		ev.SpaceDiscarded = true
		if err := c.DiscardSpace(ctx, space); err != nil {
			return err
		}
		o.emit(ev)
		return nil
	}
	p, ok, err := c.progressOf(ctx, space, v.Name())
	if err != nil {
		return err
	}
	if ok {
		ev.Context = p.Context
		if err := c.ResetView(ctx, p.Context); err != nil {
			return err
		}
	}
	o.emit(ev)
	return nil
}

// Follow keeps one view live until ctx ends: Sync, then the live view
// stream, applying each page as it comes; a dropped stream is reopened
// from the stored cursor (with backoff), a reset is performed and the
// view synced again. It returns ctx's error, or an error no retry cures
// (a refused page, an unknown view, a forbidden token).
func (c *MultiViewClient) Follow(ctx context.Context, v *api.View, o SyncOptions) error {
	if o.MinBackoff <= 0 {
		o.MinBackoff = 200 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(10*time.Second, o.MinBackoff)
	}
	backoff := o.MinBackoff
	for {
		vc, err := c.Sync(ctx, v, o)
		if err == nil {
			err = c.stream(ctx, v, vc, &o)
		}
		var re *api.ResetError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &re):
			if err := c.reset(ctx, v, re, &o); err != nil {
				return err
			}
			continue
		case final(err):
			return err
		}
		o.emit(SyncEvent{Kind: EventReconnect, View: v.Name(), Context: vc, Err: err})
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, o.MaxBackoff)
	}
}

// stream applies the live view stream's pages until it ends.
func (c *MultiViewClient) stream(ctx context.Context, v *api.View, vc views.Context, o *SyncOptions) error {
	cur, ok, err := c.Cursor(ctx, vc)
	if err != nil || !ok {
		return errors.Join(err, fmt.Errorf("%w: view %s has no cursor to stream from", ErrGap, v.Name()))
	}
	st, err := v.Watch(ctx, vc, cur, api.ViewStreamOptions{Budget: o.Budget})
	if err != nil {
		return err
	}
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	for {
		ev, err := st.Next()
		if err != nil {
			return err
		}
		if ev.Page == nil {
			continue
		}
		a, err := c.ApplyDelta(ctx, *ev.Page)
		if err != nil {
			return err
		}
		o.emit(SyncEvent{Kind: EventDelta, View: v.Name(), Context: vc, Applied: a})
	}
}

// final reports whether err is one a reconnect does not cure.
func final(err error) bool {
	if errors.Is(err, ErrBadPage) || errors.Is(err, ErrGap) {
		return true
	}
	var e *api.Error
	if errors.As(err, &e) {
		switch e.Code {
		case "not_found", "forbidden", "unauthorized", "bad_request":
			return true
		}
	}
	return false
}
