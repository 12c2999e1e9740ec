package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// stmter binds cached write statements to one open write transaction.
// The writeTx of WriteBegin and the txStmts of a store-level write are
// both one, so the trigger SQL below runs the same way in either.
type stmter interface {
	stmt(ctx context.Context, query string) (*sql.Stmt, error)
}

// triggerWrite runs fn in one write transaction on the write connection.
func (s *Store) triggerWrite(ctx context.Context, fn func(q stmter) error) error {
	return s.writeTx(ctx, func(tx *connTx) error { return fn(tx) })
}

// execIn runs one statement of q and returns how many rows it changed.
func execIn(ctx context.Context, q stmter, query string, args ...any) (int64, error) {
	ctx, err := stmtContext(ctx)
	if err != nil {
		return 0, err
	}
	st, err := q.stmt(ctx, query)
	if err != nil {
		return 0, err
	}
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// queryRowIn runs one single-row statement of q.
func queryRowIn(ctx context.Context, q stmter, query string, args ...any) (*sql.Row, error) {
	ctx, err := stmtContext(ctx)
	if err != nil {
		return nil, err
	}
	st, err := q.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(ctx, args...), nil
}

// stateIn reads a trigger's state inside q's transaction.
func stateIn(ctx context.Context, q stmter, space, trigger string) (store.TriggerState, error) {
	row, err := queryRowIn(ctx, q, sqlStateGet, space, trigger)
	if err != nil {
		return store.TriggerState{}, err
	}
	return scanState(row)
}

// advanceStmts are the statements of an advance, bound once and reused
// for every trigger, delivery and error of one call.
type advanceStmts struct {
	cursor, delivery, errors *sql.Stmt
}

func bindAdvance(ctx context.Context, q stmter) (advanceStmts, error) {
	var a advanceStmts
	var err error
	if a.cursor, err = q.stmt(ctx, sqlAdvance); err != nil {
		return a, err
	}
	if a.delivery, err = q.stmt(ctx, sqlDeliveryInsert); err != nil {
		return a, err
	}
	a.errors, err = q.stmt(ctx, sqlErrorUpsert)
	return a, err
}

// advance applies advances of space's triggers in q's transaction. An
// advance whose trigger has no state, or whose cursor or epoch moved,
// fails with ErrFenced; the caller rolls the transaction back. Its
// deliveries and errors belong to the advance's trigger unless they name
// one; a later error for the same trigger and seq replaces an earlier.
func advance(ctx context.Context, q stmter, space string, advances []store.Advance) error {
	ctx, err := stmtContext(ctx)
	if err != nil {
		return err
	}
	st, err := bindAdvance(ctx, q)
	if err != nil {
		return err
	}
	stamp := now()
	for i := range advances {
		if err := st.apply(ctx, space, &advances[i], stamp); err != nil {
			return fmt.Errorf("trigger %q: %w", advances[i].Trigger, err)
		}
	}
	return nil
}

func (st advanceStmts) apply(ctx context.Context, space string, a *store.Advance, stamp time.Time) error {
	res, err := st.cursor.ExecContext(ctx, space, a.Trigger, a.From, a.Epoch, a.To, micros(stamp))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("from cursor %d at epoch %d: %w", a.From, a.Epoch, orFenced(err))
	}
	for i := range a.Deliveries {
		d := &a.Deliveries[i]
		args := deliveryArgs(space, cmp.Or(d.Trigger, a.Trigger), d, stamp)
		if _, err := st.delivery.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("delivery %q: %w", d.ID, err)
		}
	}
	for _, e := range a.Failures {
		if _, err := st.errors.ExecContext(ctx, space, cmp.Or(e.Trigger, a.Trigger), e.Seq, e.Error); err != nil {
			return fmt.Errorf("stance error at %d: %w", e.Seq, err)
		}
	}
	return nil
}

// orFenced is err, or ErrFenced when a fenced update matched no row.
func orFenced(err error) error {
	if err != nil {
		return err
	}
	return store.ErrFenced
}

// insertDelivery inserts one delivery of space in q's transaction.
func insertDelivery(ctx context.Context, q stmter, space string, d *store.Delivery) error {
	_, err := execIn(ctx, q, sqlDeliveryInsert, deliveryArgs(space, d.Trigger, d, now())...)
	if err != nil {
		return fmt.Errorf("delivery %q: %w", d.ID, err)
	}
	return nil
}

// updateDelivery applies u in q's transaction and returns the delivery
// it left: ErrNotFound if the delivery does not exist, ErrFenced if its
// status or its trigger's epoch does not match.
func updateDelivery(ctx context.Context, q stmter, u *store.DeliveryUpdate) (store.Delivery, error) {
	args, err := deliveryUpdateArgs(u)
	if err != nil {
		return store.Delivery{}, err
	}
	row, err := queryRowIn(ctx, q, sqlDeliveryUpdate, args...)
	if err != nil {
		return store.Delivery{}, err
	}
	d, err := scanDelivery(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = missOrFenced(ctx, q, u)
	}
	return d, err
}

// completeDelivery is updateDelivery for a caller that needs only the
// outcome (a completion): the row is not read back.
func completeDelivery(ctx context.Context, q stmter, u *store.DeliveryUpdate) error {
	args, err := deliveryUpdateArgs(u)
	if err != nil {
		return err
	}
	n, err := execIn(ctx, q, sqlDeliveryComplete, args...)
	if err == nil && n == 0 {
		err = missOrFenced(ctx, q, u)
	}
	return err
}

// deliveryUpdateArgs are the arguments of sqlDeliveryComplete and
// sqlDeliveryUpdate.
func deliveryUpdateArgs(u *store.DeliveryUpdate) ([]any, error) {
	from, err := rowcodec.EncodeStrings(u.From)
	if err != nil {
		return nil, err
	}
	return []any{u.Space, u.ID, from, u.Epoch, u.Status, u.Attempts, u.LastError,
		micros(u.NextAttemptAt), micros(now())}, nil
}

// missOrFenced tells why a delivery update matched no row.
func missOrFenced(ctx context.Context, q stmter, u *store.DeliveryUpdate) error {
	row, err := queryRowIn(ctx, q, sqlDeliveryExists, u.Space, u.ID)
	if err != nil {
		return err
	}
	var n int
	if err := row.Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("delivery %q: %w", u.ID, store.ErrNotFound)
	}
	return fmt.Errorf("delivery %q (from %v, epoch %d): %w", u.ID, u.From, u.Epoch, store.ErrFenced)
}

// fired sets a trigger's last cron firing, fenced by epoch.
func fired(ctx context.Context, q stmter, space, trigger string, epoch int64, at time.Time) error {
	n, err := execIn(ctx, q, sqlFired, space, trigger, epoch, micros(at), micros(now()))
	if err != nil || n == 0 {
		return fmt.Errorf("trigger %q at epoch %d: %w", trigger, epoch, orFenced(err))
	}
	return nil
}
