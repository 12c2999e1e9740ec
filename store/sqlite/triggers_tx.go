package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/eddy-run/eddy/store"
)

// The store.TriggerTx methods run on the open write transaction, in its
// space. Any error of theirs (a taken id, a fenced update) fails the
// transaction: like a statement error of Append, it can then only be
// rolled back, and Commit reports the error.

// DeliveryInsert inserts a delivery of the transaction's space (d.Space
// is ignored); an error wrapping ErrExists if its id is taken.
func (t *writeTx) DeliveryInsert(ctx context.Context, d store.Delivery) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return fmt.Errorf("sqlite: insert delivery: %w", err)
	}
	return wrap("insert delivery", t.fail(insertDelivery(ctx, t, t.space.ID, &d)))
}

// DeliveryComplete applies u (in the transaction's space) like
// Store.DeliveryUpdate.
func (t *writeTx) DeliveryComplete(ctx context.Context, u store.DeliveryUpdate) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return fmt.Errorf("sqlite: complete delivery: %w", err)
	}
	u.Space = t.space.ID
	return wrap("complete delivery", t.fail(completeDelivery(ctx, t, &u)))
}

var _ store.DeliveryTxUpdater = (*writeTx)(nil)

// DeliveryUpdateManyTx applies updates of the transaction's space in it,
// each with its own outcome (store.DeliveryTxUpdater): a fenced or missing
// delivery changes nothing and leaves the transaction usable.
func (t *writeTx) DeliveryUpdateManyTx(ctx context.Context, us []store.DeliveryUpdate) ([]error, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return nil, fmt.Errorf("sqlite: update deliveries: %w", err)
	}
	for _, u := range us {
		if u.Space != t.space.ID {
			return nil, t.fail(fmt.Errorf("sqlite: update deliveries: delivery %q of space %q in a transaction of %q", u.ID, u.Space, t.space.ID))
		}
	}
	errs, err := completeEach(ctx, t, us)
	if err != nil {
		return nil, wrap("update deliveries", t.fail(err))
	}
	return errs, nil
}

// SingleWriter marks the store as running one write transaction at a
// time (store.SingleWriter).
func (s *Store) SingleWriter() {}

// TriggerAdvanceTx applies advances of the transaction's space's triggers
// like Store.TriggerAdvance.
func (t *writeTx) TriggerAdvanceTx(ctx context.Context, advances []store.Advance) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return fmt.Errorf("sqlite: advance trigger: %w", err)
	}
	if len(advances) == 0 {
		return nil
	}
	return wrap("advance trigger", t.fail(advance(ctx, t, t.space.ID, advances)))
}

// TriggerFiredTx records a cron firing like Store.TriggerFired.
func (t *writeTx) TriggerFiredTx(ctx context.Context, trigger string, epoch int64, at time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return fmt.Errorf("sqlite: trigger fired: %w", err)
	}
	return wrap("trigger fired", t.fail(fired(ctx, t, t.space.ID, trigger, epoch, at)))
}
