package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// initState stores a trigger's state at cursor 0 or fails the test.
func initState(t *testing.T, s *Store, space, trigger string) store.TriggerState {
	t.Helper()
	st, ok, err := s.TriggerStateInit(context.Background(), store.TriggerState{Space: space, Trigger: trigger})
	if err != nil || !ok {
		t.Fatalf("init %s: ok %v, %v", trigger, ok, err)
	}
	return st
}

// acquire takes a trigger's lease for owner or fails the test.
func acquire(t *testing.T, s *Store, space, trigger, owner string) store.TriggerState {
	t.Helper()
	st, ok, err := s.LeaseAcquire(context.Background(), store.LeaseParams{
		Space: space, Trigger: trigger, Owner: owner, Now: t0, TTL: time.Minute})
	if err != nil || !ok {
		t.Fatalf("acquire %s for %s: ok %v, %v", trigger, owner, ok, err)
	}
	return st
}

// delivery builds a pending delivery of trigger for row seq.
func delivery(id, trigger string, seq int64) store.Delivery {
	return store.Delivery{ID: id, Trigger: trigger, Seq: seq, Status: store.DeliveryPending,
		Entity: store.EntityKey{Type: "task", ID: fmt.Sprintf("t%d", seq)}, Depth: 1, CreatedAt: at(seq)}
}

func TestTriggerStateRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	in := store.TriggerState{Space: "a", Trigger: "t", Cursor: 4, Start: 2,
		Skipped: []store.SeqRange{{Lo: 1, Hi: 2}}, Fired: at(3).Add(time.Nanosecond),
		Owner: "p1", Epoch: 7, LeaseExpires: at(9).In(time.FixedZone("X", 3600)), UpdatedAt: at(1)}
	got, ok, err := s.TriggerStateInit(ctx, in)
	if err != nil || !ok {
		t.Fatalf("init: ok %v, %v", ok, err)
	}
	want := in
	want.Fired, want.LeaseExpires = at(3), at(9)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("init returned %+v, want %+v", got, want)
	}
	again, ok, err := s.TriggerStateInit(ctx, store.TriggerState{Space: "a", Trigger: "t", Cursor: 99})
	if err != nil || ok || !reflect.DeepEqual(again, want) {
		t.Fatalf("second init = %+v, %v, %v", again, ok, err)
	}
	zero := initState(t, s, "a", "u")
	if !zero.Fired.IsZero() || !zero.LeaseExpires.IsZero() || zero.Skipped == nil || zero.UpdatedAt.IsZero() {
		t.Fatalf("zero state read back as %+v", zero)
	}
	initState(t, s, "b", "a")
	list, err := s.TriggerStateList(ctx, "")
	if err != nil || len(list) != 3 || list[0].Trigger != "t" || list[1].Trigger != "u" || list[2].Space != "b" {
		t.Fatalf("list all = %+v, %v", list, err)
	}
	if _, err := s.TriggerStateGet(ctx, "a", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
}

func TestLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	if _, _, err := s.LeaseAcquire(ctx, store.LeaseParams{Space: "a", Trigger: "t", Owner: "p1", Now: t0}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("acquire without state: %v", err)
	}
	initState(t, s, "a", "t")
	st := acquire(t, s, "a", "t", "p1")
	if st.Owner != "p1" || st.Epoch != 1 || !st.LeaseExpires.Equal(t0.Add(time.Minute)) {
		t.Fatalf("first acquire: %+v", st)
	}
	if st = acquire(t, s, "a", "t", "p1"); st.Epoch != 1 {
		t.Fatalf("renewal bumped the epoch: %+v", st)
	}
	st, ok, err := s.LeaseAcquire(ctx, store.LeaseParams{Space: "a", Trigger: "t", Owner: "p2", Now: t0.Add(30 * time.Second), TTL: time.Minute})
	if err != nil || ok || st.Owner != "p1" {
		t.Fatalf("acquire of a live lease: %+v, %v, %v", st, ok, err)
	}
	st, ok, err = s.LeaseAcquire(ctx, store.LeaseParams{Space: "a", Trigger: "t", Owner: "p2", Now: t0.Add(2 * time.Minute), TTL: time.Minute})
	if err != nil || !ok || st.Owner != "p2" || st.Epoch != 2 {
		t.Fatalf("acquire of an expired lease: %+v, %v, %v", st, ok, err)
	}
	// A stale release is ignored; the holder's release frees it at once.
	if err := s.LeaseRelease(ctx, "a", "t", "p1", 1); err != nil {
		t.Fatal(err)
	}
	if st, _ = s.TriggerStateGet(ctx, "a", "t"); st.LeaseExpires.IsZero() {
		t.Fatalf("stale release expired the lease: %+v", st)
	}
	if err := s.LeaseRelease(ctx, "a", "t", "p2", 2); err != nil {
		t.Fatal(err)
	}
	if st = acquire(t, s, "a", "t", "p3"); st.Epoch != 3 {
		t.Fatalf("acquire after release: %+v", st)
	}
}

func TestLeaseRace(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	initState(t, s, "a", "t")
	const n = 8
	var wg sync.WaitGroup
	wins := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			owner := fmt.Sprintf("p%d", i)
			_, ok, err := s.LeaseAcquire(context.Background(), store.LeaseParams{
				Space: "a", Trigger: "t", Owner: owner, Now: t0, TTL: time.Minute})
			if err != nil {
				t.Error(err)
			}
			if ok {
				wins <- owner
			}
		})
	}
	wg.Wait()
	close(wins)
	if len(wins) != 1 {
		t.Fatalf("%d processes won the lease", len(wins))
	}
	if st, _ := s.TriggerStateGet(context.Background(), "a", "t"); st.Epoch != 1 {
		t.Fatalf("epoch after race = %d", st.Epoch)
	}
}

func TestTriggerAdvance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	initState(t, s, "a", "t")
	initState(t, s, "a", "u")
	acquire(t, s, "a", "t", "p1")
	adv := []store.Advance{
		{Trigger: "t", Epoch: 1, From: 0, To: 5,
			Deliveries: []store.Delivery{delivery("d1", "", 2), delivery("d2", "t", 4)},
			Failures:   []store.FilterFailure{{Seq: 3, Error: "boom"}}},
		{Trigger: "u", Epoch: 0, From: 0, To: 5, Deliveries: []store.Delivery{delivery("d3", "u", 2)}},
	}
	if err := s.TriggerAdvance(ctx, "a", adv); err != nil {
		t.Fatalf("advance: %v", err)
	}
	// A second advance from the old cursor is fenced and writes nothing.
	adv[1].Deliveries = []store.Delivery{delivery("d4", "u", 6)}
	adv[0].From, adv[0].To, adv[1].From, adv[1].To = 5, 7, 0, 7
	if err := s.TriggerAdvance(ctx, "a", adv); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("stale advance: %v", err)
	}
	if st, _ := s.TriggerStateGet(ctx, "a", "t"); st.Cursor != 5 {
		t.Fatalf("fenced advance moved t to %d", st.Cursor)
	}
	if _, err := s.DeliveryGet(ctx, "a", "d4"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("fenced advance inserted: %v", err)
	}
	// A wrong epoch is fenced too.
	if err := s.TriggerAdvance(ctx, "a", []store.Advance{{Trigger: "t", Epoch: 2, From: 5, To: 6}}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("advance at a wrong epoch: %v", err)
	}
	at2, err := s.DeliveriesAt(ctx, "a", 2)
	if err != nil || len(at2) != 2 || at2[0].ID != "d1" || at2[1].ID != "d3" || at2[0].Trigger != "t" {
		t.Fatalf("deliveries at 2 = %+v, %v", at2, err)
	}
	want := delivery("d1", "t", 2)
	want.Space, want.UpdatedAt = "a", want.CreatedAt
	if !reflect.DeepEqual(at2[0], want) {
		t.Fatalf("delivery = %+v, want %+v", at2[0], want)
	}
	errs, err := s.StanceErrorsAt(ctx, "a", 3)
	if err != nil || !reflect.DeepEqual(errs, map[string]string{"t": "boom"}) {
		t.Fatalf("stance errors = %v, %v", errs, err)
	}
	// A replayed error is recorded again without a conflict.
	err = s.TriggerAdvance(ctx, "a", []store.Advance{{Trigger: "t", Epoch: 1, From: 5, To: 6,
		Failures: []store.FilterFailure{{Trigger: "t", Seq: 3, Error: "again"}, {Trigger: "t", Seq: 3, Error: "last"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if errs, _ = s.StanceErrorsAt(ctx, "a", 3); errs["t"] != "last" {
		t.Fatalf("replayed error = %v", errs)
	}
	// A taken delivery id fails the advance.
	err = s.TriggerAdvance(ctx, "a", []store.Advance{{Trigger: "t", Epoch: 1, From: 6, To: 7,
		Deliveries: []store.Delivery{delivery("d1", "t", 7)}}})
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("taken id: %v", err)
	}
}

func TestTriggerAdvanceMany(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	initState(t, s, "a", "t")
	const n = 1000
	ds := make([]store.Delivery, n)
	for i := range ds {
		ds[i] = delivery(fmt.Sprintf("d%04d", i), "t", int64(i+1))
	}
	start := time.Now()
	if err := s.TriggerAdvance(ctx, "a", []store.Advance{{Trigger: "t", From: 0, To: n, Deliveries: ds}}); err != nil {
		t.Fatal(err)
	}
	t.Logf("advance with %d deliveries: %v", n, time.Since(start))
	open, err := s.DeliveriesOpenThrough(ctx, "a", "t", 500)
	if err != nil || open != 500 {
		t.Fatalf("open through 500 = %d, %v", open, err)
	}
	page, err := s.DeliveryList(ctx, store.DeliveryListParams{Space: "a", Trigger: "t",
		Statuses: store.OpenDeliveryStatuses, After: store.DeliveryPosition{Seq: 10, ID: "d0009"}, Limit: 3})
	if err != nil || len(page) != 3 || page[0].ID != "d0010" || page[2].ID != "d0012" {
		t.Fatalf("page = %+v, %v", page, err)
	}
}

func TestDeliveryUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	initState(t, s, "a", "t")
	acquire(t, s, "a", "t", "p1")
	if err := s.TriggerAdvance(ctx, "a", []store.Advance{{Trigger: "t", Epoch: 1, From: 0, To: 3,
		Deliveries: []store.Delivery{delivery("d1", "t", 1), delivery("d2", "t", 2)}}}); err != nil {
		t.Fatal(err)
	}
	u := store.DeliveryUpdate{Space: "a", ID: "d1", Epoch: 1, From: []store.DeliveryStatus{store.DeliveryPending},
		Status: store.DeliveryRetrying, Attempts: 1, LastError: "503", NextAttemptAt: at(10)}
	d, err := s.DeliveryUpdate(ctx, u)
	if err != nil || d.Status != store.DeliveryRetrying || d.Attempts != 1 || d.LastError != "503" ||
		!d.NextAttemptAt.Equal(at(10)) || d.UpdatedAt.Equal(d.CreatedAt) {
		t.Fatalf("update = %+v, %v", d, err)
	}
	if _, err := s.DeliveryUpdate(ctx, u); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("update from a wrong status: %v", err)
	}
	u.From, u.Epoch, u.Status, u.NextAttemptAt = nil, 2, store.DeliverySucceeded, time.Time{}
	if _, err := s.DeliveryUpdate(ctx, u); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("update at a wrong epoch: %v", err)
	}
	u.Epoch = 0
	if d, err = s.DeliveryUpdate(ctx, u); err != nil || !d.NextAttemptAt.IsZero() {
		t.Fatalf("unfenced update = %+v, %v", d, err)
	}
	u.ID = "nope"
	if _, err := s.DeliveryUpdate(ctx, u); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of a missing delivery: %v", err)
	}
	stats, err := s.DeliveryStats(ctx, "a", "t")
	want := map[store.DeliveryStatus]int{store.DeliverySucceeded: 1, store.DeliveryPending: 1}
	if err != nil || !reflect.DeepEqual(stats.ByStatus, want) || !stats.OldestOpen.Equal(at(2)) {
		t.Fatalf("stats = %+v, %v", stats, err)
	}
	list, err := s.DeliveryList(ctx, store.DeliveryListParams{Space: "a", Statuses: []store.DeliveryStatus{store.DeliverySucceeded}})
	if err != nil || len(list) != 1 || list[0].ID != "d1" {
		t.Fatalf("succeeded = %+v, %v", list, err)
	}
}

func TestTriggerMoveAndDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	if _, err := s.TriggerMove(ctx, store.TriggerMoveParams{Space: "a", Trigger: "t", Cursor: 1}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("move without state: %v", err)
	}
	initState(t, s, "a", "t")
	initState(t, s, "a", "u")
	if err := s.TriggerAdvance(ctx, "a", []store.Advance{
		{Trigger: "t", From: 0, To: 4, Deliveries: []store.Delivery{delivery("d1", "t", 1)},
			Failures: []store.FilterFailure{{Seq: 2, Error: "x"}}},
		{Trigger: "u", From: 0, To: 4, Deliveries: []store.Delivery{delivery("d2", "u", 1)}},
	}); err != nil {
		t.Fatal(err)
	}
	eight := int64(8)
	st, err := s.TriggerMove(ctx, store.TriggerMoveParams{Space: "a", Trigger: "t", Cursor: 9, Start: &eight, Skip: &store.SeqRange{Lo: 5, Hi: 8}, DiscardOpen: true})
	if err != nil || st.Cursor != 9 || st.Start != 8 || !reflect.DeepEqual(st.Skipped, []store.SeqRange{{Lo: 5, Hi: 8}}) {
		t.Fatalf("move = %+v, %v", st, err)
	}
	st, err = s.TriggerMove(ctx, store.TriggerMoveParams{Space: "a", Trigger: "t", Cursor: 2, Skip: &store.SeqRange{Lo: 10, Hi: 11}})
	if err != nil || st.Start != 8 || len(st.Skipped) != 2 {
		t.Fatalf("second move = %+v, %v", st, err)
	}
	if d, _ := s.DeliveryGet(ctx, "a", "d1"); d.Status != store.DeliveryDiscarded {
		t.Fatalf("open delivery after move: %+v", d)
	}
	if d, _ := s.DeliveryGet(ctx, "a", "d2"); d.Status != store.DeliveryPending {
		t.Fatalf("other trigger's delivery after move: %+v", d)
	}
	if err := s.TriggerStateDelete(ctx, "a", "t"); err != nil {
		t.Fatal(err)
	}
	if err := s.TriggerStateDelete(ctx, "a", "t"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.DeliveryGet(ctx, "a", "d1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delivery after delete: %v", err)
	}
	if errs, _ := s.StanceErrorsAt(ctx, "a", 2); len(errs) != 0 {
		t.Fatalf("errors after delete: %v", errs)
	}
	if d, _ := s.DeliveryGet(ctx, "a", "d2"); d.ID != "d2" {
		t.Fatal("delete removed another trigger's delivery")
	}
}

func TestTriggerFired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	initState(t, s, "a", "t")
	acquire(t, s, "a", "t", "p1")
	if err := s.TriggerFired(ctx, "a", "t", 1, at(5)); err != nil {
		t.Fatal(err)
	}
	if err := s.TriggerFired(ctx, "a", "t", 2, at(6)); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("fired at a wrong epoch: %v", err)
	}
	if st, _ := s.TriggerStateGet(ctx, "a", "t"); !st.Fired.Equal(at(5)) {
		t.Fatalf("fired = %v", st.Fired)
	}
}

// triggerTx begins a write transaction on space a (optimistic when
// optimistic is set) and returns it as a TriggerTx too.
func triggerTx(t *testing.T, s *Store, optimistic bool) (store.WriteTx, store.TriggerTx) {
	t.Helper()
	p := store.WriteBeginParams{Space: "a"}
	if optimistic {
		sp, err := s.SpaceGet(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		p.Expect = &store.Expectation{Head: sp.Head, SchemaVersion: sp.SchemaVersion}
	}
	tx, err := s.WriteBegin(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx, tx.(store.TriggerTx)
}

func TestTriggerTx(t *testing.T) {
	t.Parallel()
	for _, optimistic := range []bool{false, true} {
		t.Run(fmt.Sprintf("optimistic=%v", optimistic), func(t *testing.T) {
			t.Parallel()
			testTriggerTx(t, optimistic)
		})
	}
}

func testTriggerTx(t *testing.T, optimistic bool) {
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "a")
	initState(t, s, "a", "t")
	acquire(t, s, "a", "t", "p1")

	// A delivery's effects, its completion, an advance and a firing commit
	// with an appended commit.
	tx, ttx := triggerTx(t, s, optimistic)
	c, recs := putCommit(1, nil, rec("task", "t1", 1, `{"title":"a"}`), "trigger:t", "")
	must(t, tx.Append(ctx, c, recs))
	must(t, ttx.DeliveryInsert(ctx, delivery("d1", "t", 1)))
	must(t, ttx.DeliveryComplete(ctx, store.DeliveryUpdate{ID: "d1", Epoch: 1,
		From: []store.DeliveryStatus{store.DeliveryPending}, Status: store.DeliverySucceeded, Attempts: 1}))
	must(t, ttx.TriggerAdvanceTx(ctx, []store.Advance{{Trigger: "t", Epoch: 1, From: 0, To: 1}}))
	must(t, ttx.TriggerFiredTx(ctx, "t", 1, at(1)))
	must(t, tx.Commit(ctx))
	if d, _ := s.DeliveryGet(ctx, "a", "d1"); d.Status != store.DeliverySucceeded || d.Space != "a" {
		t.Fatalf("delivery after commit: %+v", d)
	}
	if st, _ := s.TriggerStateGet(ctx, "a", "t"); st.Cursor != 1 || !st.Fired.Equal(at(1)) {
		t.Fatalf("state after commit: %+v", st)
	}

	// Each failing trigger write aborts the whole commit.
	cases := []struct {
		name string
		do   func(store.TriggerTx) error
		want error
	}{
		{"taken id", func(x store.TriggerTx) error { return x.DeliveryInsert(ctx, delivery("d1", "t", 2)) }, store.ErrExists},
		{"wrong status", func(x store.TriggerTx) error {
			return x.DeliveryComplete(ctx, store.DeliveryUpdate{ID: "d1", From: []store.DeliveryStatus{store.DeliveryRunning}, Status: store.DeliveryFailed})
		}, store.ErrFenced},
		{"missing delivery", func(x store.TriggerTx) error {
			return x.DeliveryComplete(ctx, store.DeliveryUpdate{ID: "nope", Status: store.DeliveryFailed})
		}, store.ErrNotFound},
		{"stale cursor", func(x store.TriggerTx) error {
			return x.TriggerAdvanceTx(ctx, []store.Advance{{Trigger: "t", Epoch: 1, From: 0, To: 2}})
		}, store.ErrFenced},
		{"stale epoch", func(x store.TriggerTx) error { return x.TriggerFiredTx(ctx, "t", 2, at(2)) }, store.ErrFenced},
	}
	for _, tc := range cases {
		head := mustHead(t, s)
		tx, ttx := triggerTx(t, s, optimistic)
		c, recs := putCommit(head+1, nil, rec("task", "x"+tc.name, head+1, `{"title":"b"}`), "trigger:t", "")
		must(t, tx.Append(ctx, c, recs))
		must(t, ttx.DeliveryInsert(ctx, delivery("n"+tc.name, "t", head+1)))
		must(t, tc.do(ttx))
		if err := tx.Commit(ctx); !errors.Is(err, tc.want) {
			t.Fatalf("%s: commit = %v, want %v", tc.name, err, tc.want)
		}
		if got := mustHead(t, s); got != head {
			t.Fatalf("%s: head moved to %d", tc.name, got)
		}
		if _, err := s.DeliveryGet(ctx, "a", "n"+tc.name); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: the failed commit inserted a delivery: %v", tc.name, err)
		}
	}
	if n := openTransactions(t, s); n != 0 {
		t.Fatalf("%d transactions left open", n)
	}
}

func TestPruneDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustSpace(t, s, "a")
	initState(t, s, "a", "t")
	if err := s.TriggerAdvance(ctx, "a", []store.Advance{{Trigger: "t", From: 0, To: 4,
		Deliveries: []store.Delivery{delivery("d1", "t", 1), delivery("d3", "t", 3)},
		Failures:   []store.FilterFailure{{Seq: 2, Error: "x"}, {Seq: 4, Error: "y"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SpacePrune(ctx, "a", 2); err != nil {
		t.Fatal(err)
	}
	list, _ := s.DeliveryList(ctx, store.DeliveryListParams{Space: "a"})
	if len(list) != 1 || list[0].ID != "d3" {
		t.Fatalf("deliveries after prune: %+v", list)
	}
	e2, _ := s.StanceErrorsAt(ctx, "a", 2)
	e4, _ := s.StanceErrorsAt(ctx, "a", 4)
	if len(e2) != 0 || len(e4) != 1 {
		t.Fatalf("errors after prune: %v %v", e2, e4)
	}
}

// must fails the test on an error.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mustHead returns space a's head.
func mustHead(t *testing.T, s *Store) int64 {
	t.Helper()
	sp, err := s.SpaceGet(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	return sp.Head
}
