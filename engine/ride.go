package engine

import (
	"context"
	"sync"
	"time"

	"github.com/eddy-run/eddy/store"
)

// Delivery updates ride write groups. On a store with one writer
// (store.SingleWriter) a transaction of its own for a few delivery
// updates waits for the space's writes and they for it. So when the
// space has a write group running or queued (changelog.Log.Busy), the
// completer hands the updates to the next group instead: the in-commit
// hook, which runs in every group transaction that appends commits,
// applies them there (store.DeliveryTxUpdater) and hands each its outcome
// once the transaction ended. Updates no group takes before the space's
// writes stop (or within Engine.rideWait) are withdrawn and written on
// their own, as are those of a group that failed. Nothing rides a group
// it could fail: a fenced or missing delivery is an outcome, not an
// error.
//
// A ride never leads a group: it only joins writes that are coming
// anyway, so an idle space writes its updates at once, as before. Nor
// does it wait longer than it would for the write lock: a transaction of
// its own would wait for the same groups.

// defaultRideWait bounds how long updates wait for a write group to take
// them while the space's writes go on (Engine.rideWait): groups that
// append no commit run no hook, so they take no riders.
const defaultRideWait = 50 * time.Millisecond

// rider is one space's batch of updates waiting for a write group.
type rider struct {
	us   []store.DeliveryUpdate
	done chan rideOutcome // buffered; written once the group ended
}

// rideOutcome is what a ride came to: the group's transaction failed
// (err, nothing of the ride was written), or each update's own outcome.
type rideOutcome struct {
	errs []error
	err  error
}

// riders are the updates waiting for their space's next write group. Its
// lock is a leaf: the in-commit hook takes it on the leader's goroutine.
type riders struct {
	mu      sync.Mutex
	waiting map[string][]*rider // by space; guarded by mu
}

func (r *riders) add(space string, rd *rider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting == nil {
		r.waiting = map[string][]*rider{}
	}
	r.waiting[space] = append(r.waiting[space], rd)
}

// take removes and returns the space's waiting riders.
func (r *riders) take(space string) []*rider {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.waiting[space]
	delete(r.waiting, space)
	return rs
}

// withdraw removes rd if no group took it yet, and tells whether it did.
func (r *riders) withdraw(space string, rd *rider) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs := r.waiting[space]
	for i, w := range rs {
		if w == rd {
			r.waiting[space] = append(rs[:i:i], rs[i+1:]...)
			if len(r.waiting[space]) == 0 {
				delete(r.waiting, space)
			}
			return true
		}
	}
	return false
}

// ride offers us, updates of one space, to the space's next write group
// and returns their outcomes; ok false: no group took them (the space
// had none under way, its writes stopped first, or the group failed), and
// nothing of them was written.
func (e *Engine) ride(space string, us []store.DeliveryUpdate) (errs []error, ok bool) {
	busy, idle := e.log.Busy(space)
	if !busy {
		return nil, false
	}
	rd := &rider{us: us, done: make(chan rideOutcome, 1)}
	e.riders.add(space, rd)
	t := time.NewTimer(e.rideWait)
	defer t.Stop()
	select {
	case o := <-rd.done:
		return o.errs, o.err == nil
	case <-idle:
	case <-t.C:
	}
	if e.riders.withdraw(space, rd) {
		return nil, false
	}
	o := <-rd.done // taken meanwhile: its group is under way
	return o.errs, o.err == nil
}

// applyRiders applies the updates waiting for space in tx, the
// transaction of a group of its writes, and returns what hands them their
// outcomes once tx ended. A failure to apply them is the hook's: the group
// runs again without it, and the riders are answered with the error.
func (e *Engine) applyRiders(ctx context.Context, tx store.WriteTx, space string) (func(error), error) {
	up, ok := tx.(store.DeliveryTxUpdater)
	if !ok {
		return nil, nil
	}
	rs := e.riders.take(space)
	if len(rs) == 0 {
		return nil, nil
	}
	var us []store.DeliveryUpdate
	for _, rd := range rs {
		us = append(us, rd.us...)
	}
	errs, err := up.DeliveryUpdateManyTx(ctx, us)
	settle := func(txErr error) {
		for _, rd := range rs {
			o := rideOutcome{err: txErr}
			if txErr == nil {
				n := len(rd.us)
				o.errs, errs = errs[:n:n], errs[n:]
			}
			rd.done <- o
		}
	}
	if err != nil {
		settle(err)
		return nil, err
	}
	return settle, nil
}
