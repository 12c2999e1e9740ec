package postgres

import (
	"context"
	"time"

	"github.com/eddy-run/eddy/store"
)

var _ store.TriggerTx = (*writeTx)(nil)

// A write transaction's trigger writes are buffered like its appends and
// sent by Commit, after the appends, in the same batch (in the order
// triggerWrites explains): they cost no round trip, and they work the same for an optimistic transaction, which
// has sent nothing (not even BEGIN) before Commit. A fenced write that
// changes nothing raises through eddy_fence, which aborts the batch, so
// Commit writes nothing and reports store.ErrFenced (or
// store.ErrNotFound for a missing delivery); a taken delivery id fails
// the insert and Commit reports store.ErrExists.

// DeliveryInsert buffers the insert of d into the transaction's space.
// Zero creation and update times become now and an empty status pending.
func (tx *writeTx) DeliveryInsert(_ context.Context, d store.Delivery) error {
	if tx.conn == nil {
		return errTxDone
	}
	var k deliveryBuf
	k.add(d, d.Trigger, tx.s.nowMicro())
	k.queue(&tx.trig.rows, tx.space.ID)
	return nil
}

// DeliveryComplete buffers u, fenced like TriggerStore.DeliveryUpdate; a
// mismatch fails Commit. u.Space defaults to the transaction's space.
func (tx *writeTx) DeliveryComplete(_ context.Context, u store.DeliveryUpdate) error {
	if tx.conn == nil {
		return errTxDone
	}
	if u.Space == "" {
		u.Space = tx.space.ID
	}
	tx.trig.rows.add(deliveryCompleteQ, updateArgs(u, tx.s.nowMicro())...)
	return nil
}

// TriggerAdvanceTx buffers advances of the transaction's space's
// triggers; a fenced one fails Commit.
func (tx *writeTx) TriggerAdvanceTx(_ context.Context, advances []store.Advance) error {
	if tx.conn == nil {
		return errTxDone
	}
	queueAdvances(&tx.trig, tx.space.ID, advances, tx.s.nowMicro())
	return nil
}

// TriggerFiredTx buffers the record of a cron firing at, fenced by
// epoch; a mismatch fails Commit.
func (tx *writeTx) TriggerFiredTx(_ context.Context, trigger string, epoch int64, at time.Time) error {
	if tx.conn == nil {
		return errTxDone
	}
	tx.trig.fence(firedQ, tx.space.ID, trigger, epoch, optTime(at), tx.s.nowMicro())
	return nil
}
