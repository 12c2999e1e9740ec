package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// updaterTx is a write transaction whose DeliveryUpdateManyTx answers
// with errs (or fails with err) and records what it was given.
type updaterTx struct {
	store.WriteTx
	got  []store.DeliveryUpdate
	errs []error
	err  error
}

func (tx *updaterTx) DeliveryUpdateManyTx(_ context.Context, us []store.DeliveryUpdate) ([]error, error) {
	tx.got = us
	return tx.errs, tx.err
}

// TestApplyRidersSplitsOutcomes: the riders waiting for a space are
// applied in one call, in order, and each gets its own updates'
// outcomes once the transaction committed, or the transaction's error.
func TestApplyRidersSplitsOutcomes(t *testing.T) {
	ctx := context.Background()
	u := func(id string) store.DeliveryUpdate { return store.DeliveryUpdate{Space: "s", ID: id} }
	ride := func(e *Engine, ids ...string) *rider {
		rd := &rider{done: make(chan rideOutcome, 1)}
		for _, id := range ids {
			rd.us = append(rd.us, u(id))
		}
		e.riders.add("s", rd)
		return rd
	}
	e := &Engine{}
	a, b := ride(e, "a1", "a2"), ride(e, "b1")
	other := &rider{us: []store.DeliveryUpdate{{Space: "o", ID: "o1"}}, done: make(chan rideOutcome, 1)}
	e.riders.add("o", other)
	tx := &updaterTx{errs: []error{nil, store.ErrFenced, store.ErrNotFound}}
	settle, err := e.applyRiders(ctx, tx, "s")
	if err != nil || settle == nil {
		t.Fatalf("applyRiders = %v, %v", settle != nil, err)
	}
	if len(tx.got) != 3 || tx.got[0].ID != "a1" || tx.got[1].ID != "a2" || tx.got[2].ID != "b1" {
		t.Fatalf("applied %+v, want a1, a2, b1", tx.got)
	}
	settle(nil)
	oa, ob := <-a.done, <-b.done
	if oa.err != nil || len(oa.errs) != 2 || oa.errs[0] != nil || !errors.Is(oa.errs[1], store.ErrFenced) {
		t.Fatalf("first rider's outcome %+v", oa)
	}
	if ob.err != nil || len(ob.errs) != 1 || !errors.Is(ob.errs[0], store.ErrNotFound) {
		t.Fatalf("second rider's outcome %+v", ob)
	}
	if len(e.riders.waiting["s"]) != 0 || len(e.riders.waiting["o"]) != 1 {
		t.Fatalf("riders left %v; want only the other space's", e.riders.waiting)
	}

	// A transaction that did not commit answers every rider with its error.
	c := ride(e, "c1")
	boom := errors.New("boom")
	settle, err = e.applyRiders(ctx, &updaterTx{errs: []error{nil}}, "s")
	if err != nil {
		t.Fatal(err)
	}
	settle(boom)
	if o := <-c.done; !errors.Is(o.err, boom) {
		t.Fatalf("outcome after a failed commit %+v", o)
	}

	// A failure to apply them answers the riders at once and is the hook's.
	d := ride(e, "d1")
	if _, err := e.applyRiders(ctx, &updaterTx{err: boom}, "s"); !errors.Is(err, boom) {
		t.Fatalf("applyRiders after a failure = %v", err)
	}
	if o := <-d.done; !errors.Is(o.err, boom) {
		t.Fatalf("outcome after a failure to apply %+v", o)
	}

	// A transaction that cannot apply them leaves them waiting.
	w := ride(e, "w1")
	if settle, err := e.applyRiders(ctx, struct{ store.WriteTx }{}, "s"); settle != nil || err != nil {
		t.Fatalf("applyRiders on a transaction without DeliveryUpdateManyTx = %v, %v", settle != nil, err)
	}
	if !e.riders.withdraw("s", w) {
		t.Fatal("the rider was not left waiting")
	}
}
