package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/eddy-run/eddy/store"
)

var (
	_ store.TriggerStore = (*Store)(nil)
	_ store.TriggerTx    = (*writeTx)(nil)
)

// errEmptyOwner refuses a lease asked for by nobody.
var errEmptyOwner = errors.New("empty lease owner")

// TriggerStateInit stores ts if the trigger has no state and reports
// whether it did; either way it returns the stored state. A zero
// UpdatedAt is set to now.
func (s *Store) TriggerStateInit(ctx context.Context, ts store.TriggerState) (store.TriggerState, bool, error) {
	if ts.UpdatedAt.IsZero() {
		ts.UpdatedAt = now()
	}
	args, err := stateArgs(&ts)
	if err != nil {
		return store.TriggerState{}, false, wrap("init trigger: encode", err)
	}
	var (
		out     store.TriggerState
		created bool
	)
	err = s.triggerWrite(ctx, func(q stmter) error {
		n, err := execIn(ctx, q, sqlStateInsert, args...)
		if err != nil {
			return err
		}
		created = n > 0
		out, err = stateIn(ctx, q, ts.Space, ts.Trigger)
		return err
	})
	return out, created, wrap("init trigger", err)
}

// TriggerStateGet returns a trigger's state or ErrNotFound.
func (s *Store) TriggerStateGet(ctx context.Context, space, trigger string) (store.TriggerState, error) {
	row, err := s.rqueryRow(ctx, sqlStateGet, space, trigger)
	if err != nil {
		return store.TriggerState{}, wrap("get trigger", err)
	}
	ts, err := scanState(row)
	return ts, wrap("get trigger", err)
}

// TriggerStateList returns the states of a space's triggers ordered by
// trigger, or of every space ordered by space and trigger when space is "".
func (s *Store) TriggerStateList(ctx context.Context, space string) ([]store.TriggerState, error) {
	var (
		rows *sql.Rows
		err  error
	)
	if space == "" {
		rows, err = s.rquery(ctx, sqlStateListAll)
	} else {
		rows, err = s.rquery(ctx, sqlStateList, space)
	}
	if err != nil {
		return nil, wrap("list triggers", err)
	}
	out, err := collect(rows, scanState)
	return out, wrap("list triggers", err)
}

// TriggerStateDelete removes a trigger's state, its deliveries and its
// stance errors; ErrNotFound if it has no state.
func (s *Store) TriggerStateDelete(ctx context.Context, space, trigger string) error {
	err := s.triggerWrite(ctx, func(q stmter) error {
		n, err := execIn(ctx, q, sqlStateDelete, space, trigger)
		if err != nil || n == 0 {
			return orNoRows(err)
		}
		if _, err := execIn(ctx, q, sqlDeliveriesDelete, space, trigger); err != nil {
			return err
		}
		_, err = execIn(ctx, q, sqlErrorsDelete, space, trigger)
		return err
	})
	return wrap("delete trigger", err)
}

// TriggerMove sets a trigger's cursor (and start, when start >= 0),
// appends skip to its skipped ranges when skip is not nil and, with
// discardOpen, marks its open deliveries discarded, in one transaction.
// It is unfenced and leaves the lease alone; ErrNotFound if the trigger
// has no state.
func (s *Store) TriggerMove(ctx context.Context, p store.TriggerMoveParams) (store.TriggerState, error) {
	space, trigger, cursor, start, discardOpen := p.Space, p.Trigger, p.Cursor, p.StartArg(), p.DiscardOpen
	sk, err := skipArg(p.Skip)
	if err != nil {
		return store.TriggerState{}, wrap("move trigger: encode", err)
	}
	var out store.TriggerState
	err = s.triggerWrite(ctx, func(q stmter) error {
		stamp := micros(now())
		row, err := queryRowIn(ctx, q, sqlStateMove, space, trigger, cursor, start, sk, stamp)
		if err != nil {
			return err
		}
		if out, err = scanState(row); err != nil || !discardOpen {
			return err
		}
		_, err = execIn(ctx, q, sqlDiscardOpen, space, trigger, stamp)
		return err
	})
	return out, wrap("move trigger", err)
}

// TriggerAdvance applies advances of a space's triggers in one
// transaction. If any is fenced (its cursor or epoch moved, or its
// trigger has no state) nothing is written and the error wraps ErrFenced;
// a taken delivery id fails it with ErrExists.
func (s *Store) TriggerAdvance(ctx context.Context, space string, advances []store.Advance) error {
	if len(advances) == 0 {
		return nil
	}
	err := s.triggerWrite(ctx, func(q stmter) error { return advance(ctx, q, space, advances) })
	return wrap("advance trigger", err)
}

// TriggerFired sets a trigger's last cron firing to at, fenced by epoch
// (ErrFenced, also when the trigger has no state).
func (s *Store) TriggerFired(ctx context.Context, space, trigger string, epoch int64, at time.Time) error {
	err := s.triggerWrite(ctx, func(q stmter) error { return fired(ctx, q, space, trigger, epoch, at) })
	return wrap("trigger fired", err)
}

// LeaseAcquire grants or renews a lease (see store.LeaseParams). The
// epoch grows only when the holder changes: a holder renewing, or taking
// back a lease it released or let expire that nobody else took, keeps
// its epoch. ErrNotFound if the trigger has no state.
func (s *Store) LeaseAcquire(ctx context.Context, p store.LeaseParams) (store.TriggerState, bool, error) {
	if p.Owner == "" {
		return store.TriggerState{}, false, wrap("acquire lease", errEmptyOwner)
	}
	var (
		out store.TriggerState
		ok  bool
	)
	err := s.triggerWrite(ctx, func(q stmter) error {
		row, err := queryRowIn(ctx, q, sqlLeaseAcquire, p.Space, p.Trigger, p.Owner,
			micros(p.Now), micros(p.Now.Add(p.TTL)), micros(now()))
		if err != nil {
			return err
		}
		switch out, err = scanState(row); {
		case err == nil:
			ok = true
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		// Refused: another holder's lease is live, or there is no state.
		out, err = stateIn(ctx, q, p.Space, p.Trigger)
		return err
	})
	return out, ok, wrap("acquire lease", err)
}

// LeaseRelease makes a lease held by owner at epoch expire at once (its
// LeaseExpires becomes the zero time; the owner is kept, so the same
// owner taking it back keeps the epoch). A lease no longer held so, or a
// trigger without state, is left alone.
func (s *Store) LeaseRelease(ctx context.Context, space, trigger, owner string, epoch int64) error {
	err := s.triggerWrite(ctx, func(q stmter) error {
		_, err := execIn(ctx, q, sqlLeaseRelease, space, trigger, owner, epoch, micros(time.Time{}), micros(now()))
		return err
	})
	return wrap("release lease", err)
}

// collect scans every row of rows; the list is empty, not nil, when
// there are none.
func collect[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
