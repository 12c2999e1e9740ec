package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

var _ store.TriggerStore = (*Store)(nil)

// TriggerStateInit stores st unless the trigger has state, reporting
// whether it did, and returns the stored state. A zero UpdatedAt is now.
func (s *Store) TriggerStateInit(ctx context.Context, st store.TriggerState) (store.TriggerState, bool, error) {
	const q = `INSERT INTO trigger_state (` + stateColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (space, trigger) DO NOTHING RETURNING ` + stateColumns
	got, err := scanState(s.pool.QueryRow(ctx, q, st.Space, st.Trigger, st.Cursor, st.Start,
		encodeSkipped(st.Skipped), optTime(st.Fired), st.Owner, st.Epoch, optTime(st.LeaseExpires),
		s.orNow(st.UpdatedAt)))
	if err == nil {
		return got, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.TriggerState{}, false, wrap("init trigger state", err)
	}
	// Someone else's state won; read it (a new statement sees it).
	got, err = s.TriggerStateGet(ctx, st.Space, st.Trigger)
	return got, false, err
}

// TriggerStateGet returns a trigger's state or store.ErrNotFound.
func (s *Store) TriggerStateGet(ctx context.Context, space, trigger string) (store.TriggerState, error) {
	const q = "SELECT " + stateColumns + " FROM trigger_state WHERE space = $1 AND trigger = $2"
	st, err := scanState(s.pool.QueryRow(ctx, q, space, trigger))
	return st, wrap("get trigger state", err)
}

// TriggerStateList returns a space's trigger states ordered by trigger, or
// every space's ordered by space and trigger when space is "".
func (s *Store) TriggerStateList(ctx context.Context, space string) ([]store.TriggerState, error) {
	q := "SELECT " + stateColumns + " FROM trigger_state WHERE space = $1 ORDER BY trigger"
	args := []any{space}
	if space == "" {
		q, args = "SELECT "+stateColumns+" FROM trigger_state ORDER BY space, trigger", nil
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, wrap("list trigger states", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.TriggerState, error) { return scanState(r) })
	if out == nil {
		out = []store.TriggerState{}
	}
	return out, wrap("list trigger states", err)
}

// TriggerStateDelete removes a trigger's state, deliveries and stance
// errors in one statement; store.ErrNotFound if it has no state.
func (s *Store) TriggerStateDelete(ctx context.Context, space, trigger string) error {
	const q = `WITH s AS (DELETE FROM trigger_state WHERE space = $1 AND trigger = $2 RETURNING 1),
		d AS (DELETE FROM deliveries WHERE space = $1 AND trigger = $2 AND EXISTS (SELECT 1 FROM s)),
		e AS (DELETE FROM stance_errors WHERE space = $1 AND trigger = $2 AND EXISTS (SELECT 1 FROM s))
		SELECT count(*) FROM s`
	var n int64
	if err := s.pool.QueryRow(ctx, q, space, trigger).Scan(&n); err != nil {
		return wrap("delete trigger state", err)
	}
	if n == 0 {
		return notFound("delete trigger state", "trigger "+trigger)
	}
	return nil
}

// TriggerMove sets a trigger's cursor (and start when start >= 0),
// appends skip to its skipped ranges and, with discardOpen, discards its
// open deliveries, all in one statement; store.ErrNotFound if it has no
// state.
func (s *Store) TriggerMove(ctx context.Context, p store.TriggerMoveParams) (store.TriggerState, error) {
	space, trigger, cursor, start, skip, discardOpen := p.Space, p.Trigger, p.Cursor, p.StartArg(), p.Skip, p.DiscardOpen
	const q = `WITH s AS (UPDATE trigger_state SET cursor = $3,
			start = CASE WHEN $4::bigint >= 0 THEN $4::bigint ELSE start END,
			skipped = skipped || $5::jsonb, updated_at = $7
			WHERE space = $1 AND trigger = $2 RETURNING ` + stateColumns + `),
		d AS (UPDATE deliveries SET status = 'discarded', updated_at = $7
			WHERE $6::boolean AND space = $1 AND trigger = $2 AND status IN ` + openStatusesSQL + `
			  AND EXISTS (SELECT 1 FROM s))
		SELECT ` + stateColumns + " FROM s"
	var add []store.SeqRange
	if skip != nil {
		add = []store.SeqRange{*skip}
	}
	st, err := scanState(s.pool.QueryRow(ctx, q, space, trigger, cursor, start, encodeSkipped(add),
		discardOpen, s.nowMicro()))
	return st, wrap("move trigger", err)
}

// TriggerAdvance applies advances in one implicit transaction sent as
// one batch: a fenced cursor update per advance, one insert of every
// delivery, one upsert of every stance error. A fenced advance aborts the
// batch: nothing is written and the error wraps store.ErrFenced.
func (s *Store) TriggerAdvance(ctx context.Context, space string, advances []store.Advance) error {
	if len(advances) == 0 {
		return nil
	}
	var w triggerWrites
	queueAdvances(&w, space, advances, s.nowMicro())
	return s.sendTrigger(ctx, "advance trigger", &w)
}

// TriggerFired sets a trigger's last cron firing to at, fenced by epoch.
func (s *Store) TriggerFired(ctx context.Context, space, trigger string, epoch int64, at time.Time) error {
	var w triggerWrites
	w.fence(firedQ, space, trigger, epoch, optTime(at), s.nowMicro())
	return s.sendTrigger(ctx, "trigger fired", &w)
}

// sendTrigger sends w as one batch, which PostgreSQL runs as one implicit
// transaction: an error (a fence included) rolls all of it back.
func (s *Store) sendTrigger(ctx context.Context, op string, w *triggerWrites) error {
	b := &pgx.Batch{}
	w.queue(b)
	return wrapTrigger(op, s.pool.SendBatch(ctx, b).Close())
}

// LeaseAcquire grants or renews a trigger's lease in one conditional
// UPDATE, so of several processes racing for it exactly one wins; the
// epoch grows by one when the holder changes. When another holder's
// lease is live it returns the state and false.
func (s *Store) LeaseAcquire(ctx context.Context, p store.LeaseParams) (store.TriggerState, bool, error) {
	// The row is locked FOR UPDATE first: that waits for the delivery
	// updates in flight, which hold it FOR KEY SHARE to check the epoch
	// (an UPDATE of non-key columns alone would not wait for them).
	const lockQ = `SELECT 1 FROM trigger_state WHERE space = $1 AND trigger = $2 FOR UPDATE`
	const q = `UPDATE trigger_state SET owner = $3,
			epoch = epoch + CASE WHEN owner = $3 THEN 0 ELSE 1 END,
			lease_expires = $5, updated_at = $6
		WHERE space = $1 AND trigger = $2
		  AND (owner = '' OR owner = $3 OR lease_expires IS NULL OR lease_expires < $4)
		RETURNING ` + stateColumns
	now := microUTC(p.Now)
	var st store.TriggerState
	granted := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, lockQ, p.Space, p.Trigger).Scan(&one); err != nil {
			return err
		}
		var err error
		st, err = scanState(tx.QueryRow(ctx, q, p.Space, p.Trigger, p.Owner, now,
			microUTC(p.Now.Add(p.TTL)), s.nowMicro()))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		granted = err == nil
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return store.TriggerState{}, false, fmt.Errorf("postgres: acquire lease %s: %w", p.Trigger, store.ErrNotFound)
	}
	if err != nil {
		return store.TriggerState{}, false, wrap("acquire lease", err)
	}
	if granted {
		return st, true, nil
	}
	st, err = s.TriggerStateGet(ctx, p.Space, p.Trigger)
	if err != nil {
		return store.TriggerState{}, false, err
	}
	return st, false, nil
}

// LeaseRelease expires the lease at once (LeaseExpires becomes zero) if
// owner still holds it at epoch; otherwise it does nothing.
func (s *Store) LeaseRelease(ctx context.Context, space, trigger, owner string, epoch int64) error {
	const q = `UPDATE trigger_state SET lease_expires = NULL, updated_at = $5
		WHERE space = $1 AND trigger = $2 AND owner = $3 AND epoch = $4`
	_, err := s.pool.Exec(ctx, q, space, trigger, owner, epoch, s.nowMicro())
	return wrap("release lease", err)
}
