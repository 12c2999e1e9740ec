package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// trigger returns a stored trigger definition (not_found if absent).
func (e *Engine) trigger(ctx context.Context, space, name string) (*triggers.Trigger, error) {
	if _, err := e.log.Space(ctx, space); err != nil {
		return nil, err
	}
	d, err := e.st.DefinitionGet(ctx, space, store.DefTrigger, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem.New(problem.NotFound, "trigger %q not found", name)
	}
	if err != nil {
		return nil, fmt.Errorf("trigger %s: %w", name, err)
	}
	t, err := e.parseTrigger(space, d)
	if err != nil {
		return nil, fmt.Errorf("stored trigger %s does not parse: %w", name, err)
	}
	return t, nil
}

// state returns a trigger's state, creating it if the trigger has none
// yet.
func (e *Engine) state(ctx context.Context, space string, t *triggers.Trigger) (store.TriggerState, error) {
	st, err := e.st.TriggerStateGet(ctx, space, t.Name)
	if errors.Is(err, store.ErrNotFound) {
		return e.InitState(ctx, space, t)
	}
	if err != nil {
		return st, fmt.Errorf("state of trigger %s: %w", t.Name, err)
	}
	return st, nil
}

// Status returns a trigger's runtime status (not_found if there is no
// such trigger).
func (e *Engine) Status(ctx context.Context, space, name string) (Status, error) {
	t, err := e.trigger(ctx, space, name)
	if err != nil {
		return Status{}, err
	}
	return e.status(ctx, space, t)
}

func (e *Engine) status(ctx context.Context, space string, t *triggers.Trigger) (Status, error) {
	st, err := e.state(ctx, space, t)
	if err != nil {
		return Status{}, err
	}
	return e.statusAt(ctx, space, t, st)
}

// statusAt returns a trigger's status with its state as st says (the
// state an operation left, so its answer is the status right after it).
func (e *Engine) statusAt(ctx context.Context, space string, t *triggers.Trigger, st store.TriggerState) (Status, error) {
	sp, err := e.log.Space(ctx, space)
	if err != nil {
		return Status{}, err
	}
	stats, err := e.st.DeliveryStats(ctx, space, t.Name)
	if err != nil {
		return Status{}, fmt.Errorf("delivery stats of %s: %w", t.Name, err)
	}
	s := Status{
		Trigger: t.Name, Enabled: t.Enabled, Cursor: st.Cursor, Start: st.Start, Head: sp.Head,
		Skipped: st.Skipped, Owner: st.Owner, Epoch: st.Epoch, Deliveries: stats.ByStatus,
		LeaseExpires: timePtr(st.LeaseExpires), OldestOpen: timePtr(stats.OldestOpen),
	}
	if s.Skipped == nil {
		s.Skipped = []store.SeqRange{}
	}
	if s.Deliveries == nil {
		s.Deliveries = map[store.DeliveryStatus]int{}
	}
	if t.Source.Cron != nil {
		s.Fired = timePtr(st.Fired)
	} else {
		s.Lag = max(sp.Head-st.Cursor, 0)
	}
	return s, nil
}

func timePtr(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	return &Time{t.UTC()}
}

// Enable enables a trigger. Rows committed while it was disabled are
// evaluated, unless skip: then they get stance disabled and the cursor
// jumps to the head.
func (e *Engine) Enable(ctx context.Context, space, name string, skip bool) (Status, error) {
	t, err := e.trigger(ctx, space, name)
	if err != nil {
		return Status{}, err
	}
	// Skip first: once enabled, the engine may judge the skipped rows.
	if skip && !t.Enabled && t.Source.Changes != nil {
		if err := e.skipToHead(ctx, space, t); err != nil {
			return Status{}, err
		}
	}
	if skip && t.Source.Cron != nil {
		st, err := e.state(ctx, space, t)
		if err != nil {
			return Status{}, err
		}
		if err := e.st.TriggerFired(ctx, space, name, st.Epoch, e.now()); err != nil && !errors.Is(err, store.ErrFenced) {
			return Status{}, err
		}
	}
	if t, err = e.setEnabled(ctx, space, name, true); err != nil {
		return Status{}, err
	}
	e.moved(ctx, space, name)
	return e.status(ctx, space, t)
}

// skipToHead moves a trigger's cursor to the head, recording the rows it
// jumps over as skipped.
func (e *Engine) skipToHead(ctx context.Context, space string, t *triggers.Trigger) error {
	st, err := e.state(ctx, space, t)
	if err != nil {
		return err
	}
	sp, err := e.log.Space(ctx, space)
	if err != nil {
		return err
	}
	if st.Cursor >= sp.Head {
		return nil
	}
	_, err = e.st.TriggerMove(ctx, store.TriggerMoveParams{Space: space, Trigger: t.Name, Cursor: sp.Head,
		Skip: &store.SeqRange{Lo: st.Cursor + 1, Hi: sp.Head}})
	return err
}

// Disable disables a trigger: its cursor stands still.
func (e *Engine) Disable(ctx context.Context, space, name string) (Status, error) {
	t, err := e.setEnabled(ctx, space, name, false)
	if err != nil {
		return Status{}, err
	}
	e.moved(ctx, space, name)
	return e.status(ctx, space, t)
}

// setEnabled stores the trigger's definition with enabled set.
func (e *Engine) setEnabled(ctx context.Context, space, name string, on bool) (*triggers.Trigger, error) {
	t, err := e.trigger(ctx, space, name)
	if err != nil {
		return nil, err
	}
	if t.Enabled == on {
		return t, nil
	}
	c := *t
	c.Enabled = on
	raw, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode trigger %s: %w", name, err)
	}
	if _, err := e.st.DefinitionPut(ctx, space, store.DefTrigger, store.Definition{Name: name, Def: raw, UpdatedAt: e.now()}); err != nil {
		return nil, fmt.Errorf("store trigger %s: %w", name, err)
	}
	return e.trigger(ctx, space, name)
}

// Reset moves a trigger back to its start policy as if newly created
// (start head: the current head) and discards its open deliveries.
func (e *Engine) Reset(ctx context.Context, space, name string) (Status, error) {
	t, err := e.trigger(ctx, space, name)
	if err != nil {
		return Status{}, err
	}
	if _, err := e.state(ctx, space, t); err != nil {
		return Status{}, err
	}
	sp, err := e.log.Space(ctx, space)
	if err != nil {
		return Status{}, err
	}
	start := startSeq(t.Start, sp.Head)
	st, err := e.st.TriggerMove(ctx, store.TriggerMoveParams{Space: space, Trigger: name, Cursor: start, Start: &start, DiscardOpen: true})
	if err != nil {
		return Status{}, fmt.Errorf("reset trigger %s: %w", name, err)
	}
	// The open deliveries were discarded: none starts again here.
	e.withDispatcher(space, name, func(d *dispatcher) { d.forget(nil) })
	if t.Source.Cron != nil {
		if err := e.st.TriggerFired(ctx, space, name, 0, e.now()); err != nil && !errors.Is(err, store.ErrFenced) {
			return Status{}, err
		}
	}
	e.moved(ctx, space, name)
	if t.Source.Cron != nil {
		return e.status(ctx, space, t) // with the fired time just reset
	}
	return e.statusAt(ctx, space, t, st)
}

// Replay moves a trigger's cursor back to from (rows > from are
// evaluated again; re-delivered identical writes are no-ops). from must
// be retained (410 compacted below the horizon) and not above the head.
func (e *Engine) Replay(ctx context.Context, space, name string, from int64) (Status, error) {
	t, err := e.trigger(ctx, space, name)
	if err != nil {
		return Status{}, err
	}
	if t.Source.Changes == nil {
		return Status{}, problem.New(problem.BadRequest, "trigger %q is a cron trigger: it has no cursor to replay", name)
	}
	sp, err := e.log.Space(ctx, space)
	if err != nil {
		return Status{}, err
	}
	switch {
	case from < sp.Horizon:
		return Status{}, problem.New(problem.Compacted, "rows after %d were pruned; the horizon is %d", from, sp.Horizon).
			With("horizon", sp.Horizon)
	case from > sp.Head:
		return Status{}, problem.Param("from", "%d is above the head %d", from, sp.Head)
	}
	if _, err := e.state(ctx, space, t); err != nil {
		return Status{}, err
	}
	st, err := e.st.TriggerMove(ctx, store.TriggerMoveParams{Space: space, Trigger: name, Cursor: from})
	if err != nil {
		return Status{}, fmt.Errorf("replay trigger %s: %w", name, err)
	}
	e.moved(ctx, space, name)
	return e.statusAt(ctx, space, t, st)
}

// moved makes this process's runner take a trigger's changed definition
// or cursor before the operation answers, so, for example, no row
// committed after Disable returns is delivered by this process. Another
// process holding the lease notices at its next lease round or fenced
// write.
func (e *Engine) moved(ctx context.Context, space, name string) {
	defer e.poke()
	e.mu.Lock()
	sr := e.spaces[space]
	e.mu.Unlock()
	if sr == nil {
		return
	}
	// Read and adopt under sr.mu, as lease rounds do (see renew).
	sr.mu.Lock()
	defer sr.wake()
	defer sr.mu.Unlock()
	t, err := e.trigger(ctx, space, name)
	if err != nil {
		return
	}
	st, err := e.st.TriggerStateGet(ctx, space, name)
	if err != nil {
		return
	}
	if tr := sr.trigs[name]; tr != nil && tr.state.Epoch == st.Epoch && st.Owner == e.opts.Owner {
		sr.adopt(t, tr.fn, st)
	}
}

// Deliveries lists a trigger's deliveries, or every trigger's when
// q.Trigger is "".
func (e *Engine) Deliveries(ctx context.Context, q DeliveryQuery) (DeliveryPage, error) {
	if q.Trigger == "" {
		if _, err := e.log.Space(ctx, q.Space); err != nil {
			return DeliveryPage{}, err
		}
	} else if _, err := e.trigger(ctx, q.Space, q.Trigger); err != nil {
		return DeliveryPage{}, err
	}
	after, err := decodePosition(q.After)
	if err != nil {
		return DeliveryPage{}, problem.Param("after", "not a position from a previous page")
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	ds, err := e.st.DeliveryList(ctx, store.DeliveryListParams{
		Space: q.Space, Trigger: q.Trigger, Statuses: q.Statuses, After: after, Limit: limit + 1,
	})
	if err != nil {
		return DeliveryPage{}, fmt.Errorf("list deliveries: %w", err)
	}
	page := DeliveryPage{Deliveries: make([]DeliveryInfo, 0, min(len(ds), limit))}
	for i, d := range ds {
		if i == limit {
			last := ds[i-1]
			page.Next = encodePosition(store.DeliveryPosition{Seq: last.Seq, ID: last.ID})
			break
		}
		page.Deliveries = append(page.Deliveries, view(d))
	}
	return page, nil
}

// view is the API shape of a stored delivery.
func view(d store.Delivery) DeliveryInfo {
	return DeliveryInfo{
		ID: d.ID, Trigger: d.Trigger, Seq: d.Seq, Entity: d.Entity, Status: d.Status,
		Attempts: d.Attempts, Depth: d.Depth, LastError: d.LastError,
		NextAttemptAt: timePtr(d.NextAttemptAt), CreatedAt: Time{d.CreatedAt.UTC()}, UpdatedAt: Time{d.UpdatedAt.UTC()},
	}
}

// The statuses each operator action on a delivery applies to.
var (
	RetryFrom   = []store.DeliveryStatus{store.DeliveryFailed}
	ReleaseFrom = []store.DeliveryStatus{store.DeliveryParked}
	DiscardFrom = []store.DeliveryStatus{store.DeliveryPending, store.DeliveryRetrying, store.DeliveryFailed, store.DeliveryParked}
)

// Retry queues a failed delivery again with a fresh attempt budget.
func (e *Engine) Retry(ctx context.Context, space, id string) (DeliveryInfo, error) {
	return e.transition(ctx, space, id, "retry", RetryFrom, store.DeliveryPending, true)
}

// Release runs a parked delivery (past the causality cap) once more.
func (e *Engine) Release(ctx context.Context, space, id string) (DeliveryInfo, error) {
	return e.transition(ctx, space, id, "release", ReleaseFrom, store.DeliveryPending, true)
}

// Discard gives up a delivery that has not succeeded and is not running.
func (e *Engine) Discard(ctx context.Context, space, id string) (DeliveryInfo, error) {
	return e.transition(ctx, space, id, "discard", DiscardFrom, store.DeliveryDiscarded, false)
}

// transition moves a delivery from one of from to status; a delivery in
// another status is a conflict naming it.
func (e *Engine) transition(ctx context.Context, space, id, action string, from []store.DeliveryStatus, status store.DeliveryStatus, fresh bool) (DeliveryInfo, error) {
	if _, err := e.log.Space(ctx, space); err != nil {
		return DeliveryInfo{}, err
	}
	d, err := e.st.DeliveryGet(ctx, space, id)
	if errors.Is(err, store.ErrNotFound) {
		return DeliveryInfo{}, problem.New(problem.NotFound, "delivery %q not found", id)
	}
	if err != nil {
		return DeliveryInfo{}, fmt.Errorf("delivery %s: %w", id, err)
	}
	if !slices.Contains(from, d.Status) {
		return DeliveryInfo{}, wrongStatus(action, d, from)
	}
	u := store.DeliveryUpdate{Space: space, ID: id, From: []store.DeliveryStatus{d.Status}, Status: status, Attempts: d.Attempts, LastError: d.LastError}
	if fresh {
		u.Attempts = 0
	}
	nd, err := e.st.DeliveryUpdate(ctx, u)
	if errors.Is(err, store.ErrFenced) {
		cur, gerr := e.st.DeliveryGet(ctx, space, id)
		if gerr != nil {
			return DeliveryInfo{}, gerr
		}
		return DeliveryInfo{}, wrongStatus(action, cur, from)
	}
	if err != nil {
		return DeliveryInfo{}, fmt.Errorf("%s delivery %s: %w", action, id, err)
	}
	if status == store.DeliveryDiscarded {
		e.withDispatcher(space, nd.Trigger, func(d *dispatcher) { d.forget(func(x string) bool { return x == id }) })
	} else {
		e.resyncDeliveries(space, nd.Trigger)
	}
	return view(nd), nil
}

func wrongStatus(action string, d store.Delivery, from []store.DeliveryStatus) error {
	return problem.New(problem.Conflict, "cannot %s delivery %q: it is %s (want %v)", action, d.ID, d.Status, from).
		With("status", d.Status)
}

// resyncDeliveries makes the dispatcher of a trigger this process holds
// reload its open deliveries now (another process's dispatcher reloads at
// its next lease round).
func (e *Engine) resyncDeliveries(space, trigger string) {
	e.withDispatcher(space, trigger, (*dispatcher).resync)
}

// withDispatcher calls fn with the dispatcher of a trigger this process
// holds, if any.
func (e *Engine) withDispatcher(space, trigger string, fn func(*dispatcher)) {
	e.mu.Lock()
	sr := e.spaces[space]
	e.mu.Unlock()
	if sr == nil {
		return
	}
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if t := sr.trigs[trigger]; t != nil {
		fn(t.disp)
	}
}
