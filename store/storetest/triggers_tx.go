package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// begin opens a write transaction on s1 and returns it with its trigger
// writes; the transaction is rolled back at cleanup if still open.
func (h *trig) begin() (store.WriteTx, store.TriggerTx) {
	h.t.Helper()
	tx, err := h.st.WriteBegin(h.ctx, store.WriteBeginParams{Space: "s1"})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = tx.Rollback(ctx0) })
	ttx, ok := tx.(store.TriggerTx)
	if !ok {
		h.t.Fatalf("%T does not implement store.TriggerTx", tx)
	}
	return tx, ttx
}

// appendNext appends one commit to tx at the next seq.
func (h *trig) appendNext(tx store.WriteTx) {
	h.t.Helper()
	seq := tx.Space().Head + 1
	c, rec := rawCommit(seq, store.EntityKey{Type: "task", ID: fmt.Sprintf("c%d", seq)}, `{"a":1}`, nil, "")
	if err := tx.Append(h.ctx, c, []store.Record{rec}); err != nil {
		h.t.Fatalf("append %d: %v", seq, err)
	}
}

// commitTx runs fn in a write transaction with one appended commit and
// commits; the commit must land.
func (h *trig) commitTx(what string, fn func(store.TriggerTx) error) {
	h.t.Helper()
	head := h.head()
	tx, ttx := h.begin()
	h.appendNext(tx)
	if err := fn(ttx); err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
	if err := tx.Commit(h.ctx); err != nil {
		h.t.Fatalf("%s: commit: %v", what, err)
	}
	if got := h.head(); got != head+1 {
		h.t.Fatalf("%s: head %d after commit, want %d", what, got, head+1)
	}
}

// failTx runs fn in a write transaction with one appended commit and
// requires an error wrapping target, from fn or from Commit (a driver
// may report it at either), and the transaction not to commit.
func (h *trig) failTx(what string, target error, fn func(store.TriggerTx) error) {
	h.t.Helper()
	head := h.head()
	tx, ttx := h.begin()
	h.appendNext(tx)
	callErr := fn(ttx)
	commitErr := tx.Commit(h.ctx)
	if commitErr == nil {
		h.t.Fatalf("%s: committed after error %v; want Commit to fail", what, callErr)
	}
	if !errors.Is(callErr, target) && !errors.Is(commitErr, target) {
		h.t.Fatalf("%s: errors %v (call), %v (commit); want %v", what, callErr, commitErr, target)
	}
	if got := h.head(); got != head {
		h.t.Fatalf("%s: head %d, want %d: the transaction committed", what, got, head)
	}
}

func (h *trig) head() int64 {
	h.t.Helper()
	sp, err := h.st.SpaceGet(h.ctx, "s1")
	if err != nil {
		h.t.Fatal(err)
	}
	return sp.Head
}

func testTriggerTx(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	h.init("s1", "t", 0)
	e := h.lease("s1", "t", "p1", 0).Epoch
	x1 := dl("t", "x1", 1)

	h.commitTx("insert", func(tx store.TriggerTx) error { return tx.DeliveryInsert(h.ctx, x1) })
	wantDelivery(t, "inserted in a transaction", h.get("s1", "x1"), x1)

	tx, ttx := h.begin()
	if err := ttx.DeliveryInsert(h.ctx, dl("t", "x2", 1)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.wantNoDelivery("s1", "x2")

	h.failTx("insert a taken id", store.ErrExists, func(tx store.TriggerTx) error {
		return tx.DeliveryInsert(h.ctx, dl("t", "x1", 2))
	})
	wantDelivery(t, "x1 after a duplicate insert", h.get("s1", "x1"), x1)

	testTriggerTxComplete(t, h, e)
	testTriggerTxAdvance(t, h, e)
	testDeliveryUpdateManyTx(t, h, e)
}

// testDeliveryUpdateManyTx holds a store.SingleWriter's write transactions
// to store.DeliveryTxUpdater: each update with its own outcome, a fenced
// or missing one failing nothing, all of them committing or rolling back
// with the transaction, and an update of another space failing it. A
// store with several writers need not implement it.
func testDeliveryUpdateManyTx(t *testing.T, h *trig, e int64) {
	t.Helper()
	tx, _ := h.begin()
	_, ok := tx.(store.DeliveryTxUpdater)
	if err := tx.Rollback(h.ctx); err != nil {
		t.Fatal(err)
	}
	if _, single := h.st.(store.SingleWriter); single && !ok {
		t.Fatalf("%T is a store.SingleWriter but its WriteTx %T is no store.DeliveryTxUpdater", h.st, tx)
	}
	if !ok {
		return
	}
	updates := func(tx store.WriteTx, us ...store.DeliveryUpdate) ([]error, error) {
		return tx.(store.DeliveryTxUpdater).DeliveryUpdateManyTx(h.ctx, us)
	}
	h.commitTx("insert z1", func(tx store.TriggerTx) error { return tx.DeliveryInsert(h.ctx, dl("t", "z1", 3)) })
	done := store.DeliveryUpdate{Space: "s1", ID: "y1", Epoch: e, From: store.OpenDeliveryStatuses,
		Status: store.DeliverySucceeded, Attempts: 1}
	fenced, missing, later := done, done, done
	fenced.ID, missing.ID, later.ID = "x1", "nope", "z1" // x1 succeeded already

	// Rolled back with its transaction.
	tx, _ = h.begin()
	h.appendNext(tx)
	if errs, err := updates(tx, later); err != nil || errs[0] != nil {
		t.Fatalf("update z1: %v, %v", errs, err)
	}
	if err := tx.Rollback(h.ctx); err != nil {
		t.Fatal(err)
	}
	if d := h.get("s1", "z1"); d.Status != store.DeliveryPending {
		t.Fatalf("z1 after its transaction rolled back: %s", js(d))
	}

	// Committed with it, each update on its own terms.
	head := h.head()
	tx, _ = h.begin()
	h.appendNext(tx)
	errs, err := updates(tx, fenced, missing, done)
	if err != nil {
		t.Fatalf("updates: %v", err)
	}
	if !errors.Is(errs[0], store.ErrFenced) || !errors.Is(errs[1], store.ErrNotFound) || errs[2] != nil {
		t.Fatalf("outcomes %v; want fenced, not found, nil", errs)
	}
	if err := tx.Commit(h.ctx); err != nil {
		t.Fatalf("commit after a fenced and a missing update: %v", err)
	}
	if got := h.head(); got != head+1 {
		t.Fatalf("head %d, want %d", got, head+1)
	}
	if d := h.get("s1", "y1"); d.Status != store.DeliverySucceeded || d.Attempts != 1 {
		t.Fatalf("y1 after its update committed: %s", js(d))
	}

	// An update of another space fails the transaction.
	other := later
	other.Space = "s2"
	tx, _ = h.begin()
	h.appendNext(tx)
	if _, err := updates(tx, other); err == nil {
		t.Fatal("an update of s2 in a transaction of s1 succeeded")
	}
	if err := tx.Commit(h.ctx); err == nil {
		t.Fatal("a transaction failed by an update committed")
	}
	if got := h.head(); got != head+1 {
		t.Fatalf("head %d after a failed transaction, want %d", got, head+1)
	}
}

func testTriggerTxComplete(t *testing.T, h *trig, e int64) {
	t.Helper()
	done := store.DeliveryUpdate{Space: "s1", ID: "x1", Epoch: e, From: []store.DeliveryStatus{store.DeliveryPending},
		Status: store.DeliverySucceeded, Attempts: 1}
	h.commitTx("complete", func(tx store.TriggerTx) error { return tx.DeliveryComplete(h.ctx, done) })
	if d := h.get("s1", "x1"); d.Status != store.DeliverySucceeded || d.Attempts != 1 {
		t.Fatalf("completed in a transaction: %s", js(d))
	}
	h.failTx("complete twice", store.ErrFenced, func(tx store.TriggerTx) error { return tx.DeliveryComplete(h.ctx, done) })
	stale := done
	stale.From, stale.Epoch = nil, e+1
	h.failTx("complete at another epoch", store.ErrFenced, func(tx store.TriggerTx) error {
		return tx.DeliveryComplete(h.ctx, stale)
	})
	missing := done
	missing.ID = "nope"
	h.failTx("complete a missing delivery", store.ErrNotFound, func(tx store.TriggerTx) error {
		return tx.DeliveryComplete(h.ctx, missing)
	})
}

func testTriggerTxAdvance(t *testing.T, h *trig, e int64) {
	t.Helper()
	adv := store.Advance{Trigger: "t", Epoch: e, From: 0, To: 3, Deliveries: []store.Delivery{dl("t", "y1", 3)},
		Failures: []store.FilterFailure{{Trigger: "t", Seq: 2, Error: "boom"}}}
	h.commitTx("advance", func(tx store.TriggerTx) error { return tx.TriggerAdvanceTx(h.ctx, []store.Advance{adv}) })
	if st := h.state("s1", "t"); st.Cursor != 3 {
		t.Fatalf("cursor %d after an advance in a transaction, want 3", st.Cursor)
	}
	h.get("s1", "y1")
	if m := h.errorsAt("s1", 2); m["t"] != "boom" {
		t.Fatalf("stance errors at 2 = %v", m)
	}
	stale := store.Advance{Trigger: "t", Epoch: e, From: 0, To: 5, Deliveries: []store.Delivery{dl("t", "y2", 4)}}
	h.failTx("advance from a stale cursor", store.ErrFenced, func(tx store.TriggerTx) error {
		return tx.TriggerAdvanceTx(h.ctx, []store.Advance{stale})
	})
	h.wantNoDelivery("s1", "y2")

	h.commitTx("fired", func(tx store.TriggerTx) error { return tx.TriggerFiredTx(h.ctx, "t", e, ts(60)) })
	if st := h.state("s1", "t"); !sameTime(st.Fired, ts(60)) || st.Cursor != 3 {
		t.Fatalf("state after a firing in a transaction: %s", js(st))
	}
	h.failTx("fired at another epoch", store.ErrFenced, func(tx store.TriggerTx) error {
		return tx.TriggerFiredTx(h.ctx, "t", e+1, ts(120))
	})
	if st := h.state("s1", "t"); !sameTime(st.Fired, ts(60)) {
		t.Fatalf("a fenced firing moved fired to %s", st.Fired)
	}
}
