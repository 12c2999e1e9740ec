package engine

import (
	"context"
	"errors"
	"time"

	"github.com/eddy-run/eddy/store"
)

// manage runs lease rounds every LeaseTTL/3 (or when poked) until ctx
// ends, then gives every lease up.
func (e *Engine) manage(ctx context.Context) {
	tick := time.NewTicker(e.opts.LeaseTTL / 3)
	defer tick.Stop()
	for {
		e.round(ctx)
		select {
		case <-ctx.Done():
			e.releaseAll()
			return
		case <-tick.C:
		case <-e.kick:
		}
	}
}

// round renews or acquires the lease of every trigger of every space and
// hands the owned ones to their space's runner.
func (e *Engine) round(ctx context.Context) {
	spaces, err := e.log.Spaces(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.logger.Warn("engine: list spaces", "err", err)
		}
		return
	}
	for _, sp := range spaces {
		if err := e.roundSpace(ctx, sp); err != nil && ctx.Err() == nil {
			e.logger.Warn("engine: lease round", "space", sp.ID, "err", err)
		}
	}
}

// roundSpace runs one lease round over a space's triggers.
func (e *Engine) roundSpace(ctx context.Context, sp store.Space) error {
	cat, err := e.catalog(ctx, sp.ID)
	if err != nil {
		return err
	}
	sr := e.spaceFor(ctx, sp.ID, len(cat.triggers) > 0)
	if sr == nil {
		return nil
	}
	return sr.renew(ctx, cat)
}

// spaceFor returns the runner of a space, starting one when create is
// set and there is none; nil when there is none and create is false.
func (e *Engine) spaceFor(ctx context.Context, space string, create bool) *spaceRun {
	e.mu.Lock()
	defer e.mu.Unlock()
	sr := e.spaces[space]
	if sr == nil && create && e.cancel != nil {
		sr = newSpaceRun(e, space)
		e.spaces[space] = sr
		sr.start(ctx)
	}
	return sr
}

// releaseAll gives up every lease this process holds, so another process
// takes over at once instead of after the TTL.
func (e *Engine) releaseAll() {
	e.mu.Lock()
	spaces := make([]*spaceRun, 0, len(e.spaces))
	for _, sr := range e.spaces {
		spaces = append(spaces, sr)
	}
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, sr := range spaces {
		sr.stop()
		for _, l := range sr.leases() {
			err := e.st.LeaseRelease(ctx, sr.id, l.name, e.opts.Owner, l.epoch)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				e.logger.Warn("engine: release lease", "space", sr.id, "trigger", l.name, "err", err)
			}
		}
	}
}
