package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/internal/readahead"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// spaceRun drives the triggers of one space that this process holds the
// lease of: one goroutine evaluates and fires cron triggers; each trigger
// has a dispatcher running its deliveries.
type spaceRun struct {
	e  *Engine
	id string

	// mu serializes evaluation, cron firing and operator moves with
	// lease rounds: a round reads the stored states while no advance is
	// under way. Lock order: Engine.mu, then mu, then dispatcher.mu.
	// Nothing blocking on a dispatcher's drain runs under it (drains go
	// through the engine's drainer).
	mu    sync.Mutex
	trigs map[string]*trig // guarded by mu
	index *triggers.Index  // guarded by mu
	// indexed lists the trigger definitions index was built from.
	indexed map[string]*triggers.Trigger // guarded by mu
	// ahead are the pages being read ahead, in seq order (readAhead).
	ahead *readahead.Queue[aheadKey, changelog.RawPullPage] // guarded by mu
	// stopped is set by stop: the in-commit path judges nothing more.
	stopped bool // guarded by mu
	// through is a head every active change trigger's cursor had reached
	// when the in-commit path last judged them all (written under mu,
	// read without it by Notify: a commit at or below it needs no
	// evaluation).
	through atomic.Int64
	// judging is the end of the group being judged in its commit when
	// that judging covers every active trigger (0: none): its commit's
	// notification (PostgreSQL's NOTIFY may overtake settleInCommit)
	// needs no evaluation either; a judging that fails wakes the
	// evaluator itself.
	judging atomic.Int64

	// skipped are the commits of this process's latest groups that
	// committed without being judged in them (see incommit.go).
	// skippedMu is a leaf: the write path takes it and waits on nothing
	// under it.
	skippedMu sync.Mutex
	skipped   []store.Commit // guarded by skippedMu
	// likely: the next group is likely to judge skipped (see kept).
	likely bool // guarded by skippedMu

	wakeCh chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// trig is one owned trigger: its definition, its function and its state
// as this process last wrote or read it.
type trig struct {
	def   *triggers.Trigger   // guarded by spaceRun.mu
	fn    *functions.Function // guarded by spaceRun.mu
	state store.TriggerState  // guarded by spaceRun.mu
	disp  *dispatcher         // set once
	// fenced: an in-commit advance of it was fenced; only the evaluator
	// advances it until adopt or reload reads its state again.
	fenced bool // guarded by spaceRun.mu
}

// lease names a held lease.
type lease struct {
	name  string
	epoch int64
}

func newSpaceRun(e *Engine, id string) *spaceRun {
	return &spaceRun{e: e, id: id, trigs: map[string]*trig{}, wakeCh: make(chan struct{}, 1),
		ahead: readahead.New[aheadKey, changelog.RawPullPage](sameAhead)}
}

func (sr *spaceRun) start(ctx context.Context) {
	ctx, sr.cancel = context.WithCancel(ctx)
	sr.wg.Go(func() { sr.loop(ctx) })
}

// stop ends the space's goroutine and hands every dispatcher to the
// engine's drainer, each followed, with release, by releasing its
// lease.
func (sr *spaceRun) stop(release bool) {
	if sr.cancel != nil {
		sr.cancel()
	}
	sr.wg.Wait()
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.stopped = true
	for name, t := range sr.trigs {
		var then func()
		if release {
			then = sr.releaseAfterDrain(lease{name: name, epoch: t.state.Epoch})
		}
		sr.e.drains.stop(t.disp, then)
		delete(sr.trigs, name)
	}
}

// drop forgets an owned trigger; its dispatcher drains in the
// background. The caller holds sr.mu.
func (sr *spaceRun) drop(name string) {
	if t := sr.trigs[name]; t != nil {
		sr.e.drains.stop(t.disp, nil)
		delete(sr.trigs, name)
	}
}

// judged reports whether the in-commit path judged, or is judging,
// every active trigger through head.
func (sr *spaceRun) judged(head int64) bool {
	return head >= 0 && (head <= sr.through.Load() || head <= sr.judging.Load())
}

func (sr *spaceRun) wake() {
	select {
	case sr.wakeCh <- struct{}{}:
	default:
	}
}

// loop evaluates until caught up and fires due cron triggers whenever
// woken, polled, or a cron slot comes due.
func (sr *spaceRun) loop(ctx context.Context) {
	for ctx.Err() == nil {
		for {
			more, err := sr.evaluate(ctx)
			if err != nil && ctx.Err() == nil {
				sr.e.logger.Warn("engine: evaluate", "space", sr.id, "err", err)
			}
			if !more || err != nil || ctx.Err() != nil {
				break
			}
		}
		next := sr.fireCron(ctx)
		wait := sr.e.opts.Poll
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(sr.e.now()), time.Millisecond))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-sr.wakeCh:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// renew carries out a lease round's plan (see planLeases): it releases
// the surplus leases, renews or acquires the planned ones, starts the
// newly owned triggers, updates the others' definitions, notices cursors
// moved by an operator and drops triggers it no longer owns. It returns
// the states of the leases it holds, as the store answered them.
func (sr *spaceRun) renew(ctx context.Context, cat *catalog, plan leasePlan) (map[string]store.TriggerState, error) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	// Read the definitions again under mu: an operator's move (Disable,
	// say) adopts its definition under mu too, so a round that read the
	// catalog before it never adopts the older definition after it.
	if fresh, err := sr.e.catalog(ctx, sr.id); err == nil {
		cat = fresh
	}
	sr.release(plan.release)
	var errs []error
	held := map[string]store.TriggerState{}
	for _, name := range plan.hold() {
		def := cat.triggers[name]
		if def == nil {
			continue // deleted since the plan
		}
		st, ok, err := sr.acquire(ctx, def)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue
		}
		held[name] = st
		sr.adopt(def, cat.functions[def.Function], st)
	}
	for name := range sr.trigs {
		if _, ok := held[name]; !ok {
			sr.drop(name)
		}
	}
	sr.wake()
	return held, errors.Join(errs...)
}

// acquire makes sure the trigger has a state and asks for its lease.
func (sr *spaceRun) acquire(ctx context.Context, def *triggers.Trigger) (store.TriggerState, bool, error) {
	e := sr.e
	p := store.LeaseParams{Space: sr.id, Trigger: def.Name, Owner: e.opts.Owner, Now: e.now(), TTL: e.opts.LeaseTTL}
	st, ok, err := e.st.LeaseAcquire(ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		if _, err = e.InitState(ctx, sr.id, def); err != nil {
			return st, false, err
		}
		st, ok, err = e.st.LeaseAcquire(ctx, p)
	}
	if err != nil {
		return st, false, fmt.Errorf("lease %s: %w", def.Name, err)
	}
	return st, ok, nil
}

// adopt installs or updates an owned trigger. A changed epoch (the lease
// was lost and taken again) or a cursor moved behind this process's back
// reloads the trigger's deliveries.
func (sr *spaceRun) adopt(def *triggers.Trigger, fn *functions.Function, st store.TriggerState) {
	t := sr.trigs[def.Name]
	if t == nil {
		t = &trig{state: st}
		t.disp = newDispatcher(sr, def.Name)
		sr.trigs[def.Name] = t
		t.def, t.fn = def, fn
		t.disp.configure(def, fn, st.Epoch)
		t.disp.start()
		return
	}
	moved := t.state.Epoch != st.Epoch || t.state.Cursor != st.Cursor
	t.def, t.fn = def, fn
	t.state = st
	t.fenced = false
	t.disp.configure(def, fn, st.Epoch)
	if moved {
		t.disp.resync()
	} else {
		t.disp.refresh()
	}
}

// activeChange returns the enabled change triggers, by name.
func (sr *spaceRun) activeChange() map[string]*trig {
	out := map[string]*trig{}
	for name, t := range sr.trigs {
		if t.def.Enabled && t.def.Source.Changes != nil {
			out[name] = t
		}
	}
	return out
}

// indexFor returns the match index of the active triggers, rebuilding it
// when their definitions changed.
func (sr *spaceRun) indexFor(active map[string]*trig) *triggers.Index {
	if sr.indexCurrent(active) {
		return sr.index
	}
	defs := make([]*triggers.Trigger, 0, len(active))
	sr.indexed = make(map[string]*triggers.Trigger, len(active))
	for name, t := range active {
		defs = append(defs, t.def)
		sr.indexed[name] = t.def
	}
	sr.index = triggers.NewIndex(defs)
	return sr.index
}

// indexCurrent reports whether index was built from the active
// triggers' definitions.
func (sr *spaceRun) indexCurrent(active map[string]*trig) bool {
	if sr.index == nil || len(sr.indexed) != len(active) {
		return false
	}
	for name, t := range active {
		if sr.indexed[name] != t.def {
			return false
		}
	}
	return true
}

// reload re-reads the states of the named triggers after a fenced write:
// a lost lease drops the trigger; a moved cursor is taken over.
func (sr *spaceRun) reload(ctx context.Context, names []string) {
	for _, name := range names {
		t := sr.trigs[name]
		if t == nil {
			continue
		}
		st, err := sr.e.st.TriggerStateGet(ctx, sr.id, name)
		if err != nil || st.Epoch != t.state.Epoch || st.Owner != sr.e.opts.Owner {
			sr.drop(name)
			continue
		}
		t.fenced = false
		if st.Cursor != t.state.Cursor {
			t.state = st
			t.disp.resync()
		}
	}
}
