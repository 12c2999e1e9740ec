package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// ExerciseTriggers runs the conformance suite of store.TriggerStore and
// store.TriggerTx against the driver open returns: trigger state, leases,
// fenced advances, deliveries, stance errors, pruning, and the trigger
// writes of a write transaction. The driver's Store must implement
// store.TriggerStore and its WriteTx store.TriggerTx.
func ExerciseTriggers(t *testing.T, open OpenFunc) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, OpenFunc)
	}{
		{"StateInit", testTriggerInit},
		{"StateList", testTriggerList},
		{"Advance", testTriggerAdvance},
		{"AdvanceMany", testTriggerAdvanceMany},
		{"AdvanceFenced", testTriggerAdvanceFenced},
		{"Lease", testTriggerLease},
		{"LeaseRace", testTriggerLeaseRace},
		{"Fired", testTriggerFired},
		{"Move", testTriggerMove},
		{"Delete", testTriggerDelete},
		{"DeliveryUpdate", testDeliveryUpdate},
		{"DeliveryUpdateMany", testDeliveryUpdateMany},
		{"DeliveryList", testDeliveryList},
		{"DeliveryStats", testDeliveryStats},
		{"Prune", testTriggerPrune},
		{"Tx", testTriggerTx},
		{"Processes", testProcesses},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { t.Parallel(); tc.fn(t, open) })
	}
}

// trig is one trigger test's store, with the spaces s1 and s2.
type trig struct {
	t   *testing.T
	ctx context.Context
	st  store.Store
	ts  store.TriggerStore
}

func newTrig(t *testing.T, open OpenFunc) *trig {
	t.Helper()
	st := open(t)
	ts, ok := st.(store.TriggerStore)
	if !ok {
		t.Fatalf("%T does not implement store.TriggerStore", st)
	}
	h := &trig{t: t, ctx: t.Context(), st: st, ts: ts}
	for _, sp := range []string{"s1", "s2"} {
		if _, err := st.SpaceCreate(h.ctx, sp, "epoch1"); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// init stores a new state of trigger at cursor (start 0) and returns it.
func (h *trig) init(space, trigger string, cursor int64) store.TriggerState {
	h.t.Helper()
	st, created, err := h.ts.TriggerStateInit(h.ctx, store.TriggerState{Space: space, Trigger: trigger, Cursor: cursor})
	if err != nil || !created {
		h.t.Fatalf("init %s/%s = %v, %v", space, trigger, created, err)
	}
	return st
}

// lease takes the lease of a trigger for owner at ts(at) for 10s; it
// must be granted.
func (h *trig) lease(space, trigger, owner string, at int) store.TriggerState {
	h.t.Helper()
	st, ok, err := h.acquire(space, trigger, owner, at)
	if err != nil || !ok {
		h.t.Fatalf("lease %s/%s for %s = %s, %v, %v", space, trigger, owner, js(st), ok, err)
	}
	return st
}

func (h *trig) acquire(space, trigger, owner string, at int) (store.TriggerState, bool, error) {
	return h.ts.LeaseAcquire(h.ctx, store.LeaseParams{Space: space, Trigger: trigger, Owner: owner,
		Now: ts(at), TTL: 10 * time.Second})
}

// state returns a trigger's state.
func (h *trig) state(space, trigger string) store.TriggerState {
	h.t.Helper()
	st, err := h.ts.TriggerStateGet(h.ctx, space, trigger)
	if err != nil {
		h.t.Fatalf("get %s/%s: %v", space, trigger, err)
	}
	return st
}

// advance applies advances of space and fails the test on an error.
func (h *trig) advance(space string, advances ...store.Advance) {
	h.t.Helper()
	if err := h.ts.TriggerAdvance(h.ctx, space, advances); err != nil {
		h.t.Fatalf("advance %s: %v", space, err)
	}
}

// get returns a delivery.
func (h *trig) get(space, id string) store.Delivery {
	h.t.Helper()
	d, err := h.ts.DeliveryGet(h.ctx, space, id)
	if err != nil {
		h.t.Fatalf("get delivery %s/%s: %v", space, id, err)
	}
	return d
}

// wantNoDelivery fails unless the delivery is absent.
func (h *trig) wantNoDelivery(space, id string) {
	h.t.Helper()
	if d, err := h.ts.DeliveryGet(h.ctx, space, id); !errors.Is(err, store.ErrNotFound) {
		h.t.Fatalf("get delivery %s/%s = %s, %v; want ErrNotFound", space, id, js(d), err)
	}
}

// list returns the ids of a listing.
func (h *trig) list(p store.DeliveryListParams) []string {
	h.t.Helper()
	ds, err := h.ts.DeliveryList(h.ctx, p)
	if err != nil {
		h.t.Fatalf("list deliveries %+v: %v", p, err)
	}
	return deliveryIDs(ds)
}

// update applies an update that must succeed.
func (h *trig) update(u store.DeliveryUpdate) store.Delivery {
	h.t.Helper()
	d, err := h.ts.DeliveryUpdate(h.ctx, u)
	if err != nil {
		h.t.Fatalf("update delivery %+v: %v", u, err)
	}
	return d
}

// setStatus moves a delivery of s1 to status, unfenced.
func (h *trig) setStatus(id string, status store.DeliveryStatus) {
	h.t.Helper()
	h.update(store.DeliveryUpdate{Space: "s1", ID: id, Status: status})
}

// errorsAt returns the stance errors recorded for a row.
func (h *trig) errorsAt(space string, seq int64) map[string]string {
	h.t.Helper()
	m, err := h.ts.StanceErrorsAt(h.ctx, space, seq)
	if err != nil {
		h.t.Fatalf("stance errors at %s/%d: %v", space, seq, err)
	}
	return m
}

// dl is a pending delivery of trigger in s1 for the row seq, created at
// ts(seq).
func dl(trigger, id string, seq int64) store.Delivery {
	return store.Delivery{ID: id, Space: "s1", Trigger: trigger, Seq: seq,
		Entity: store.EntityKey{Type: "task", ID: fmt.Sprintf("t%d", seq)}, Status: store.DeliveryPending,
		Depth: 1, CreatedAt: ts(int(seq)), UpdatedAt: ts(int(seq))}
}

// in returns d moved to space.
func in(space string, d store.Delivery) store.Delivery { d.Space = space; return d }

func deliveryIDs(ds []store.Delivery) []string {
	ids := []string{}
	for _, d := range ds {
		ids = append(ids, d.ID)
	}
	return ids
}

// sameTime compares two times at UTC microsecond precision.
func sameTime(a, b time.Time) bool {
	return a.UTC().Truncate(time.Microsecond).Equal(b.UTC().Truncate(time.Microsecond))
}

// wantDelivery compares every field of a delivery the caller sets
// (UpdatedAt aside, which the store may stamp).
func wantDelivery(t *testing.T, what string, got, want store.Delivery) {
	t.Helper()
	ok := got.ID == want.ID && got.Space == want.Space && got.Trigger == want.Trigger && got.Seq == want.Seq &&
		got.Entity == want.Entity && got.Status == want.Status && got.Attempts == want.Attempts &&
		got.Depth == want.Depth && got.LastError == want.LastError &&
		sameTime(got.NextAttemptAt, want.NextAttemptAt) && sameTime(got.CreatedAt, want.CreatedAt)
	if !ok {
		t.Fatalf("%s: delivery %s, want %s", what, js(got), js(want))
	}
}

// wantState compares every field of a state but UpdatedAt; nil and empty
// Skipped are equal.
func wantState(t *testing.T, what string, got, want store.TriggerState) {
	t.Helper()
	ok := got.Space == want.Space && got.Trigger == want.Trigger && got.Cursor == want.Cursor &&
		got.Start == want.Start && slices.Equal(got.Skipped, want.Skipped) && sameTime(got.Fired, want.Fired) &&
		got.Owner == want.Owner && got.Epoch == want.Epoch && sameTime(got.LeaseExpires, want.LeaseExpires)
	if !ok {
		t.Fatalf("%s: state %s, want %s", what, js(got), js(want))
	}
}

// wantIs fails unless errors.Is(err, target).
func wantIs(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err %v, want %v", what, err, target)
	}
}

func testTriggerInit(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	want := store.TriggerState{Space: "s1", Trigger: "a", Cursor: 5, Start: 3,
		Skipped: []store.SeqRange{{Lo: 1, Hi: 2}}, Fired: epoch0, Owner: "p0", Epoch: 4,
		LeaseExpires: ts(9), UpdatedAt: ts(2)}
	got, created, err := h.ts.TriggerStateInit(h.ctx, want)
	if err != nil || !created {
		t.Fatalf("first init: created %v, %v", created, err)
	}
	wantState(t, "first init", got, want)
	if !sameTime(got.UpdatedAt, ts(2)) {
		t.Fatalf("first init: updatedAt %s, want %s", got.UpdatedAt, ts(2))
	}
	again := want
	again.Cursor, again.Start, again.Skipped, again.Epoch = 9, 0, nil, 0
	got, created, err = h.ts.TriggerStateInit(h.ctx, again)
	if err != nil || created {
		t.Fatalf("second init: created %v, %v; want the stored state", created, err)
	}
	wantState(t, "second init", got, want)
	wantState(t, "get", h.state("s1", "a"), want)

	zero := h.init("s1", "z", 0)
	if !zero.Fired.IsZero() || !zero.LeaseExpires.IsZero() || len(zero.Skipped) != 0 || zero.Owner != "" || zero.Epoch != 0 {
		t.Fatalf("zero state round trip: %s", js(zero))
	}
	if zero.UpdatedAt.IsZero() {
		t.Fatal("a zero UpdatedAt was not stamped")
	}
	if _, err := h.ts.TriggerStateGet(h.ctx, "s1", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get missing: %v, want ErrNotFound", err)
	}
	if _, err := h.ts.TriggerStateGet(h.ctx, "s2", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get in another space: %v, want ErrNotFound", err)
	}
}

func testTriggerList(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	h.init("s2", "b", 0)
	h.init("s1", "z", 0)
	h.init("s1", "a", 0)
	names := func(space string) []string {
		t.Helper()
		list, err := h.ts.TriggerStateList(h.ctx, space)
		if err != nil {
			t.Fatalf("list %q: %v", space, err)
		}
		out := []string{}
		for _, s := range list {
			out = append(out, s.Space+"/"+s.Trigger)
		}
		return out
	}
	for space, want := range map[string][]string{
		"s1": {"s1/a", "s1/z"},
		"":   {"s1/a", "s1/z", "s2/b"},
		"s3": {},
	} {
		if got := names(space); !slices.Equal(got, want) {
			t.Fatalf("list %q = %v, want %v", space, got, want)
		}
	}
}

func testTriggerLease(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	h.init("s1", "t", 0)
	expect := func(what string, owner string, at int, ok bool, holder string, epoch int64, expires int) {
		t.Helper()
		st, got, err := h.acquire("s1", "t", owner, at)
		if err != nil || got != ok || st.Owner != holder || st.Epoch != epoch || !sameTime(st.LeaseExpires, ts(expires)) {
			t.Fatalf("%s: %s at %d = %s, %v, %v; want ok %v, %s at epoch %d until %d",
				what, owner, at, js(st), got, err, ok, holder, epoch, expires)
		}
		if cur := h.state("s1", "t"); cur.Owner != holder || cur.Epoch != epoch {
			t.Fatalf("%s: stored %s", what, js(cur))
		}
	}
	expect("first", "A", 0, true, "A", 1, 10)
	expect("renew", "A", 5, true, "A", 1, 15)
	expect("live", "B", 10, false, "A", 1, 15)
	expect("expiring now", "B", 15, false, "A", 1, 15)
	expect("steal", "B", 16, true, "B", 2, 26)
	expect("stolen", "A", 17, false, "B", 2, 26)

	release := func(owner string, epoch int64) {
		t.Helper()
		if err := h.ts.LeaseRelease(h.ctx, "s1", "t", owner, epoch); err != nil {
			t.Fatalf("release %s@%d: %v", owner, epoch, err)
		}
	}
	release("A", 1) // no longer A's
	release("B", 1) // wrong epoch
	expect("release by others", "A", 18, false, "B", 2, 26)
	release("B", 2)
	expect("after release", "A", 18, true, "A", 3, 28)
	release("A", 3)
	expect("same owner after release", "A", 19, true, "A", 3, 29)
	expect("same owner after expiry", "A", 100, true, "A", 3, 110)

	if _, _, err := h.acquire("s1", "nope", "A", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("acquire without state: %v, want ErrNotFound", err)
	}
	if err := h.ts.LeaseRelease(h.ctx, "s1", "nope", "A", 1); err != nil {
		t.Fatalf("release without state: %v", err)
	}
}

// testTriggerLeaseRace has processes race for one free lease: exactly
// one wins.
func testTriggerLeaseRace(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	h.init("s1", "t", 0)
	const n = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins []string
	)
	for i := range n {
		owner := fmt.Sprintf("p%d", i)
		wg.Go(func() {
			_, ok, err := h.acquire("s1", "t", owner, 0)
			if err != nil {
				t.Errorf("acquire %s: %v", owner, err)
			}
			if ok {
				mu.Lock()
				wins = append(wins, owner)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(wins) != 1 {
		t.Fatalf("winners %v, want exactly one", wins)
	}
	if st := h.state("s1", "t"); st.Owner != wins[0] || st.Epoch != 1 {
		t.Fatalf("state %s, want %s at epoch 1", js(st), wins[0])
	}
}

func testTriggerFired(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	h.init("s1", "t", 0)
	e := h.lease("s1", "t", "p1", 0).Epoch
	if err := h.ts.TriggerFired(h.ctx, "s1", "t", e, epoch0); err != nil {
		t.Fatal(err)
	}
	if st := h.state("s1", "t"); !sameTime(st.Fired, epoch0) {
		t.Fatalf("fired %s, want %s", st.Fired, epoch0)
	}
	wantIs(t, "fired at a stale epoch", h.ts.TriggerFired(h.ctx, "s1", "t", e+1, ts(60)), store.ErrFenced)
	wantIs(t, "fired without state", h.ts.TriggerFired(h.ctx, "s1", "nope", 0, ts(60)), store.ErrFenced)
	if st := h.state("s1", "t"); !sameTime(st.Fired, epoch0) {
		t.Fatalf("a fenced firing moved fired to %s", st.Fired)
	}
}

func testTriggerMove(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	h.init("s1", "t", 0)
	h.init("s1", "u", 0)
	lease := h.lease("s1", "t", "p1", 0)
	eu := h.lease("s1", "u", "p1", 0).Epoch
	h.advance("s1",
		store.Advance{Trigger: "t", Epoch: lease.Epoch, From: 0, To: 10,
			Deliveries: []store.Delivery{dl("t", "a", 2), dl("t", "b", 3), dl("t", "c", 4), dl("t", "d", 5)}},
		store.Advance{Trigger: "u", Epoch: eu, From: 0, To: 10, Deliveries: []store.Delivery{dl("u", "x", 2)}})
	h.setStatus("b", store.DeliverySucceeded)
	h.setStatus("c", store.DeliveryRunning)
	h.setStatus("d", store.DeliveryRetrying)

	want := lease
	want.Cursor, want.Skipped = 4, []store.SeqRange{{Lo: 5, Hi: 8}}
	got, err := h.ts.TriggerMove(h.ctx, store.TriggerMoveParams{Space: "s1", Trigger: "t", Cursor: 4, Skip: &store.SeqRange{Lo: 5, Hi: 8}})
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, "move keeping start", got, want)
	if d := h.get("s1", "a"); d.Status != store.DeliveryPending {
		t.Fatalf("move without discard changed a delivery: %s", js(d))
	}

	want.Cursor, want.Start = 6, 2
	want.Skipped = append(want.Skipped, store.SeqRange{Lo: 9, Hi: 9})
	if got, err = h.ts.TriggerMove(h.ctx, store.TriggerMoveParams{Space: "s1", Trigger: "t", Cursor: 6, Start: ptr(int64(2)), Skip: &store.SeqRange{Lo: 9, Hi: 9}, DiscardOpen: true}); err != nil {
		t.Fatal(err)
	}
	wantState(t, "move with discard", got, want)
	for id, status := range map[string]store.DeliveryStatus{"a": store.DeliveryDiscarded, "b": store.DeliverySucceeded,
		"c": store.DeliveryDiscarded, "d": store.DeliveryDiscarded, "x": store.DeliveryPending} {
		if d := h.get("s1", id); d.Status != status {
			t.Fatalf("after discard %s is %s, want %s", id, d.Status, status)
		}
	}

	want.Cursor = 7
	if got, err = h.ts.TriggerMove(h.ctx, store.TriggerMoveParams{Space: "s1", Trigger: "t", Cursor: 7}); err != nil {
		t.Fatal(err)
	}
	wantState(t, "move without skip", got, want)
	wantState(t, "stored after move", h.state("s1", "t"), want)

	err = h.ts.TriggerAdvance(h.ctx, "s1", []store.Advance{{Trigger: "t", Epoch: lease.Epoch, From: 10, To: 12}})
	wantIs(t, "advance from before the move", err, store.ErrFenced)
	h.advance("s1", store.Advance{Trigger: "t", Epoch: lease.Epoch, From: 7, To: 12})
	if _, err := h.ts.TriggerMove(h.ctx, store.TriggerMoveParams{Space: "s1", Trigger: "nope", Cursor: 1, DiscardOpen: true}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("move without state: %v, want ErrNotFound", err)
	}
}

func testTriggerDelete(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	for _, name := range []string{"t", "u"} {
		h.init("s1", name, 0)
		e := h.lease("s1", name, "p1", 0).Epoch
		h.advance("s1", store.Advance{Trigger: name, Epoch: e, From: 0, To: 5,
			Deliveries: []store.Delivery{dl(name, name+"-d", 2)},
			Failures:   []store.FilterFailure{{Trigger: name, Seq: 3, Error: name + " failed"}}})
	}
	if err := h.ts.TriggerStateDelete(h.ctx, "s1", "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ts.TriggerStateGet(h.ctx, "s1", "t"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get deleted: %v, want ErrNotFound", err)
	}
	h.wantNoDelivery("s1", "t-d")
	h.get("s1", "u-d")
	if m := h.errorsAt("s1", 3); len(m) != 1 || m["u"] != "u failed" {
		t.Fatalf("stance errors after delete = %v, want u's only", m)
	}
	wantIs(t, "second delete", h.ts.TriggerStateDelete(h.ctx, "s1", "t"), store.ErrNotFound)
	if list, err := h.ts.TriggerStateList(h.ctx, "s1"); err != nil || len(list) != 1 || list[0].Trigger != "u" {
		t.Fatalf("list after delete = %s, %v", js(list), err)
	}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
