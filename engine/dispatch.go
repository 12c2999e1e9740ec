package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// dispatcher runs one owned trigger's open deliveries: at most
// Concurrency at a time and, with ordering "entity", one per entity in
// seq order (a later delivery of an entity waits behind an earlier one
// that is running or waiting to retry).
type dispatcher struct {
	sr   *spaceRun
	name string

	// mu guards the queue and the configuration; it is a leaf but for
	// the store reads load makes without it. Lock order: spaceRun.mu,
	// then mu.
	mu      sync.Mutex
	cfg     runConfig        // guarded by mu
	queue   []*item          // guarded by mu; open deliveries ordered by (seq, id)
	byID    map[string]*item // guarded by mu
	running int              // guarded by mu
	// clock counts queue changes; resync uses it to tell what changed
	// while it was reading the store.
	clock    uint64            // guarded by mu
	finished map[string]uint64 // guarded by mu
	resyncAt uint64            // guarded by mu; clock value of the last requested resync, 0 if none

	wakeCh chan struct{}
	// cancel stops starting attempts; abort cancels the ones under way
	// (when they outlast drainTimeout).
	cancel, abort context.CancelFunc
	wg            sync.WaitGroup
}

// drainTimeout bounds how long stopping a dispatcher lets the attempts
// under way finish: a clean hand-over (shutdown, a lease released to
// balance) then runs no function twice.
const drainTimeout = 10 * time.Second

// runConfig is what a delivery runs with: the trigger and function as
// of the last lease round, and the lease epoch fencing its writes.
type runConfig struct {
	def   *triggers.Trigger
	fn    *functions.Function
	epoch int64
}

// item is one open delivery in the queue.
// Every field is guarded by the dispatcher's mu.
type item struct {
	d       store.Delivery
	running bool
	added   uint64
	// c is the causing commit when the evaluator handed it over (nil:
	// the attempt reads it); dropped after the first attempt.
	c *store.Commit
}

// maxAttached bounds the queue length up to which new deliveries keep
// their causing commit in memory.
const maxAttached = 10_000

func newDispatcher(sr *spaceRun, name string) *dispatcher {
	return &dispatcher{sr: sr, name: name, byID: map[string]*item{}, finished: map[string]uint64{}, wakeCh: make(chan struct{}, 1)}
}

// start loads the trigger's open deliveries and starts dispatching.
func (d *dispatcher) start() {
	ctx, cancel := context.WithCancel(context.Background())
	runCtx, abort := context.WithCancel(context.Background())
	d.cancel, d.abort = cancel, abort
	d.resync()
	d.wg.Go(func() { d.loop(ctx, runCtx) })
}

// stop ends dispatching and lets the attempts under way finish, for at
// most drainTimeout or until abort closes; then it cancels them and
// waits. Callers run it through the engine's drainer, never under a
// lock.
func (d *dispatcher) stop(abort <-chan struct{}) {
	if d.cancel == nil {
		return
	}
	d.cancel()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(drainTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		d.abort()
		<-done
	case <-abort:
		d.abort()
		<-done
	}
	d.abort()
}

func (d *dispatcher) configure(def *triggers.Trigger, fn *functions.Function, epoch int64) {
	d.mu.Lock()
	d.cfg = runConfig{def: def, fn: fn, epoch: epoch}
	d.mu.Unlock()
	d.wake()
}

func (d *dispatcher) wake() {
	select {
	case d.wakeCh <- struct{}{}:
	default:
	}
}

// resync asks the loop to reload the open deliveries from the store (the
// cursor moved, or an operator retried, released or discarded some).
func (d *dispatcher) resync() {
	d.mu.Lock()
	d.clock++
	d.resyncAt = d.clock
	d.mu.Unlock()
	d.wake()
}

// refresh is a lease round's periodic resync.
func (d *dispatcher) refresh() { d.resync() }

// add queues deliveries the evaluator just created (parked ones are not
// open and are skipped); commits, when set, holds their causing commits
// by seq.
func (d *dispatcher) add(ds []store.Delivery, commits map[int64]*store.Commit) {
	d.mu.Lock()
	for _, dl := range ds {
		if dl.Status == store.DeliveryParked || d.byID[dl.ID] != nil {
			continue
		}
		d.clock++
		it := &item{d: dl, added: d.clock}
		if len(d.queue) < maxAttached {
			it.c = commits[dl.Seq]
		}
		d.byID[dl.ID] = it
		d.queue = append(d.queue, it)
	}
	d.sortQueue()
	d.mu.Unlock()
	d.wake()
}

func (d *dispatcher) sortQueue() {
	slices.SortFunc(d.queue, func(a, b *item) int {
		if a.d.Seq != b.d.Seq {
			return int(a.d.Seq - b.d.Seq)
		}
		return strings.Compare(a.d.ID, b.d.ID)
	})
}

// loop starts runnable deliveries, with runCtx, whenever woken or a
// retry comes due, until ctx ends.
func (d *dispatcher) loop(ctx, runCtx context.Context) {
	for ctx.Err() == nil {
		if d.needResync() {
			if err := d.load(ctx); err != nil && ctx.Err() == nil {
				d.sr.e.logger.Warn("engine: load deliveries", "space", d.sr.id, "trigger", d.name, "err", err)
			}
		}
		next := d.pass(runCtx)
		wait := d.sr.e.opts.Poll
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), time.Millisecond))
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-d.wakeCh:
		case <-timer.C:
		}
		timer.Stop()
	}
}

func (d *dispatcher) needResync() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.resyncAt > 0
}

// load reads the trigger's open deliveries and merges them into the
// queue: new ones (retried, released) join; queued ones the store no
// longer holds open (discarded, reset) leave unless running. Changes the
// queue saw while reading win over the read.
func (d *dispatcher) load(ctx context.Context) error {
	d.mu.Lock()
	began := d.clock
	d.mu.Unlock()
	open, err := d.sr.e.openDeliveries(ctx, d.sr.id, d.name)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.resyncAt <= began {
		d.resyncAt = 0 // else asked again while reading: read again next
	}
	seen := make(map[string]bool, len(open))
	for _, dl := range open {
		seen[dl.ID] = true
		if it := d.byID[dl.ID]; it != nil || d.finished[dl.ID] > began {
			continue
		}
		d.clock++
		it := &item{d: dl, added: d.clock}
		d.byID[dl.ID] = it
		d.queue = append(d.queue, it)
	}
	d.queue = slices.DeleteFunc(d.queue, func(it *item) bool {
		drop := !seen[it.d.ID] && !it.running && it.added <= began
		if drop {
			delete(d.byID, it.d.ID)
		}
		return drop
	})
	clear(d.finished)
	d.sortQueue()
	return nil
}

// pass starts every runnable delivery the limits allow and returns when
// the earliest waiting retry comes due (zero if none).
func (d *dispatcher) pass(ctx context.Context) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	cfg := d.cfg
	if cfg.def == nil || !cfg.def.Enabled {
		return time.Time{} // disabled: no attempt starts until enabled
	}
	limit := max(cfg.def.Delivery.Concurrency, 1)
	ordered := cfg.def.Delivery.Ordering == triggers.OrderingEntity
	blocked := map[store.EntityKey]bool{}
	now := d.sr.e.now()
	var next time.Time
	for _, it := range d.queue {
		if ordered && blocked[it.d.Entity] {
			continue
		}
		if ordered {
			blocked[it.d.Entity] = true
		}
		if it.running {
			continue
		}
		if it.d.NextAttemptAt.After(now) {
			if next.IsZero() || it.d.NextAttemptAt.Before(next) {
				next = it.d.NextAttemptAt
			}
			continue
		}
		if d.running >= limit {
			break
		}
		d.launch(ctx, cfg, it)
	}
	return next
}

// launch runs one delivery in its own goroutine. The attempt holds one
// of the trigger's concurrency slots while its function runs and frees
// it (free) once all that is left is to record an outcome that writes
// nothing: the delivery itself stays running, so neither it nor a later
// delivery of its entity (ordering "entity") starts before done. An
// outcome written with the function's actions keeps the slot until it
// is committed, so a function never runs beside the writes of the one
// before it beyond the concurrency.
func (d *dispatcher) launch(ctx context.Context, cfg runConfig, it *item) {
	it.running = true
	d.running++
	dl, c := it.d, it.c
	it.c = nil
	var once sync.Once
	free := func() {
		once.Do(func() {
			d.mu.Lock()
			d.running--
			d.mu.Unlock()
			d.wake()
		})
	}
	d.wg.Go(func() {
		res, err := d.sr.e.execute(ctx, d.sr.id, cfg, dl, c, free)
		free()
		d.done(it, res, err)
	})
}

// done takes a finished attempt back: a terminal delivery leaves the
// queue; a retrying one waits for its next attempt. A fenced or failed
// completion drops the delivery from the queue (the store still holds
// it; the next resync brings it back if it is open).
func (d *dispatcher) done(it *item, res store.Delivery, err error) {
	d.mu.Lock()
	it.running = false
	d.clock++
	switch {
	case err != nil || !res.Status.Open():
		d.remove(it.d.ID)
		d.finished[it.d.ID] = d.clock
	default:
		it.d = res
	}
	d.mu.Unlock()
	if err != nil {
		switch {
		case errors.Is(err, store.ErrFenced), errors.Is(err, store.ErrNotFound):
			// The lease, the delivery's status or the trigger itself
			// changed under the attempt: a lease round sorts it out.
			d.sr.e.poke()
		case !errors.Is(err, context.Canceled):
			d.sr.e.logger.Warn("engine: delivery", "space", d.sr.id, "trigger", d.name, "delivery", it.d.ID, "err", err)
		}
		d.resync()
	}
	d.sr.e.progressed()
	d.wake()
}

// forget drops the queued deliveries that are not running and that
// match (all of them when match is nil): an operator discarded them or
// reset the trigger, so none may start again.
func (d *dispatcher) forget(match func(id string) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clock++
	d.queue = slices.DeleteFunc(d.queue, func(it *item) bool {
		drop := !it.running && (match == nil || match(it.d.ID))
		if drop {
			delete(d.byID, it.d.ID)
			d.finished[it.d.ID] = d.clock
		}
		return drop
	})
}

func (d *dispatcher) remove(id string) {
	delete(d.byID, id)
	d.queue = slices.DeleteFunc(d.queue, func(it *item) bool { return it.d.ID == id })
}

// openDeliveries reads every open delivery of a trigger.
func (e *Engine) openDeliveries(ctx context.Context, space, trigger string) ([]store.Delivery, error) {
	var out []store.Delivery
	p := store.DeliveryListParams{Space: space, Trigger: trigger, Statuses: store.OpenDeliveryStatuses, Limit: 1000}
	for {
		page, err := e.st.DeliveryList(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < p.Limit {
			return out, nil
		}
		last := page[len(page)-1]
		p.After = store.DeliveryPosition{Seq: last.Seq, ID: last.ID}
	}
}
