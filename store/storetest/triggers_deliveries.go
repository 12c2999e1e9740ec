package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

func testTriggerAdvance(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	h.init("s1", "t", 0)
	h.init("s1", "u", 0)
	et := h.lease("s1", "t", "p1", 0).Epoch
	eu := h.lease("s1", "u", "p1", 0).Epoch
	d1, d2, d3 := dl("t", "d1", 3), dl("t", "d2", 7), dl("u", "d3", 3)
	d2.Depth, d2.Attempts, d2.NextAttemptAt = 3, 1, ts(40)
	h.advance("s1",
		store.Advance{Trigger: "t", Epoch: et, From: 0, To: 10, Deliveries: []store.Delivery{d1, d2},
			Failures: []store.FilterFailure{{Trigger: "t", Seq: 5, Error: "boom"}}},
		store.Advance{Trigger: "u", Epoch: eu, From: 0, To: 4, Deliveries: []store.Delivery{d3}})

	for name, cursor := range map[string]int64{"t": 10, "u": 4} {
		if st := h.state("s1", name); st.Cursor != cursor || st.Epoch != 1 || st.Owner != "p1" {
			t.Fatalf("state of %s after advance: %s", name, js(st))
		}
	}
	list, err := h.ts.DeliveryList(h.ctx, store.DeliveryListParams{Space: "s1", Trigger: "t"})
	if err != nil || len(list) != 2 {
		t.Fatalf("list = %s, %v", js(list), err)
	}
	wantDelivery(t, "listed d1", list[0], d1)
	wantDelivery(t, "listed d2", list[1], d2)
	wantDelivery(t, "get d2", h.get("s1", "d2"), d2)
	at, err := h.ts.DeliveriesAt(h.ctx, "s1", 3)
	if err != nil || len(at) != 2 {
		t.Fatalf("deliveries at 3 = %s, %v", js(at), err)
	}
	wantDelivery(t, "at 3, first", at[0], d1)
	wantDelivery(t, "at 3, second", at[1], d3)
	if at, err := h.ts.DeliveriesAt(h.ctx, "s1", 4); err != nil || len(at) != 0 {
		t.Fatalf("deliveries at 4 = %s, %v", js(at), err)
	}
	if m := h.errorsAt("s1", 5); !maps.Equal(m, map[string]string{"t": "boom"}) {
		t.Fatalf("stance errors at 5 = %v", m)
	}
	if m := h.errorsAt("s1", 3); len(m) != 0 {
		t.Fatalf("stance errors at 3 = %v, want none", m)
	}
	if m := h.errorsAt("s2", 5); len(m) != 0 {
		t.Fatalf("stance errors of another space = %v", m)
	}

	// A replay re-evaluates rows: the same trigger and seq may error again
	// (the new error replaces the old), and a row may get a new delivery,
	// listed after the older one.
	if _, err := h.ts.TriggerMove(h.ctx, store.TriggerMoveParams{Space: "s1", Trigger: "t", Cursor: 2}); err != nil {
		t.Fatal(err)
	}
	d4 := dl("t", "d0", 3)
	d4.CreatedAt = ts(50)
	h.advance("s1", store.Advance{Trigger: "t", Epoch: et, From: 2, To: 10, Deliveries: []store.Delivery{d4},
		Failures: []store.FilterFailure{{Trigger: "t", Seq: 5, Error: "boom again"}}})
	if m := h.errorsAt("s1", 5); !maps.Equal(m, map[string]string{"t": "boom again"}) {
		t.Fatalf("stance errors at 5 after replay = %v", m)
	}
	if at, err := h.ts.DeliveriesAt(h.ctx, "s1", 3); err != nil || !slices.Equal(deliveryIDs(at), []string{"d1", "d0", "d3"}) {
		t.Fatalf("deliveries at 3 after replay = %s, %v; want d1, d0 (newer), d3", js(at), err)
	}
}

// testTriggerAdvanceMany advances over a large batch in one call.
func testTriggerAdvanceMany(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	h.init("s1", "t", 0)
	e := h.lease("s1", "t", "p1", 0).Epoch
	const n = 1000
	ds := make([]store.Delivery, n)
	for i := range ds {
		ds[i] = dl("t", fmt.Sprintf("d%04d", i), int64(i+1))
	}
	start := time.Now()
	h.advance("s1", store.Advance{Trigger: "t", Epoch: e, From: 0, To: n, Deliveries: ds})
	t.Logf("advance with %d deliveries: %s", n, time.Since(start))
	stats, err := h.ts.DeliveryStats(h.ctx, "s1", "t")
	if err != nil || stats.ByStatus[store.DeliveryPending] != n {
		t.Fatalf("stats = %+v, %v; want %d pending", stats, err, n)
	}
	if got := h.list(store.DeliveryListParams{Space: "s1", After: store.DeliveryPosition{Seq: n - 1, ID: "d0998"}}); !slices.Equal(got, []string{"d0999"}) {
		t.Fatalf("last page = %v", got)
	}
}

func testTriggerAdvanceFenced(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	h.init("s1", "t", 0)
	h.init("s1", "u", 0)
	et := h.lease("s1", "t", "p1", 0).Epoch
	eu := h.lease("s1", "u", "p1", 0).Epoch
	h.advance("s1", store.Advance{Trigger: "t", Epoch: et, From: 0, To: 10, Deliveries: []store.Delivery{dl("t", "d1", 2)}})

	okU := store.Advance{Trigger: "u", Epoch: eu, From: 0, To: 4, Deliveries: []store.Delivery{dl("u", "y", 3)},
		Failures: []store.FilterFailure{{Trigger: "u", Seq: 11, Error: "u failed"}}}
	tAt := func(epoch, from int64) store.Advance {
		return store.Advance{Trigger: "t", Epoch: epoch, From: from, To: 12, Deliveries: []store.Delivery{dl("t", "x", 11)},
			Failures: []store.FilterFailure{{Trigger: "t", Seq: 11, Error: "t failed"}}}
	}
	cases := []struct {
		name     string
		advances []store.Advance
		want     error
	}{
		{"stale cursor", []store.Advance{tAt(et, 5)}, store.ErrFenced},
		{"stale epoch", []store.Advance{tAt(et+1, 10)}, store.ErrFenced},
		{"no state", []store.Advance{{Trigger: "nope", From: 0, To: 1}}, store.ErrFenced},
		{"second of two", []store.Advance{okU, tAt(et, 5)}, store.ErrFenced},
		{"first of two", []store.Advance{tAt(et+1, 10), okU}, store.ErrFenced},
		{"taken delivery id", []store.Advance{{Trigger: "u", Epoch: eu, From: 0, To: 4,
			Deliveries: []store.Delivery{dl("u", "y", 3), dl("u", "d1", 3)}}}, store.ErrExists},
	}
	for _, tc := range cases {
		wantIs(t, tc.name, h.ts.TriggerAdvance(h.ctx, "s1", tc.advances), tc.want)
		if ct, cu := h.state("s1", "t").Cursor, h.state("s1", "u").Cursor; ct != 10 || cu != 0 {
			t.Fatalf("%s: cursors t %d, u %d; want 10, 0", tc.name, ct, cu)
		}
		h.wantNoDelivery("s1", "x")
		h.wantNoDelivery("s1", "y")
		if d := h.get("s1", "d1"); d.Trigger != "t" {
			t.Fatalf("%s: d1 = %s", tc.name, js(d))
		}
		if m := h.errorsAt("s1", 11); len(m) != 0 {
			t.Fatalf("%s: stance errors written: %v", tc.name, m)
		}
	}
	h.advance("s1", okU, tAt(et, 10))
}

func testDeliveryUpdate(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	h.init("s1", "t", 0)
	e := h.lease("s1", "t", "p1", 0).Epoch
	d1, d2 := dl("t", "d1", 3), dl("t", "d2", 4)
	h.advance("s1", store.Advance{Trigger: "t", Epoch: e, From: 0, To: 10, Deliveries: []store.Delivery{d1, d2}})

	u := store.DeliveryUpdate{Space: "s1", ID: "d1", Epoch: e, From: []store.DeliveryStatus{store.DeliveryPending},
		Status: store.DeliveryRunning, Attempts: 1}
	want := d1
	want.Status, want.Attempts = store.DeliveryRunning, 1
	wantDelivery(t, "pending to running", h.update(u), want)
	_, err := h.ts.DeliveryUpdate(h.ctx, u)
	wantIs(t, "update from a status it left", err, store.ErrFenced)
	wantDelivery(t, "after a fenced update", h.get("s1", "d1"), want)

	u = store.DeliveryUpdate{Space: "s1", ID: "d1", Epoch: e, From: []store.DeliveryStatus{store.DeliveryPending, store.DeliveryRunning},
		Status: store.DeliveryRetrying, Attempts: 1, LastError: "timeout", NextAttemptAt: ts(30)}
	want.Status, want.LastError, want.NextAttemptAt = store.DeliveryRetrying, "timeout", ts(30)
	wantDelivery(t, "running to retrying", h.update(u), want)
	wantDelivery(t, "stored retrying", h.get("s1", "d1"), want)

	stale := u
	stale.Epoch, stale.From, stale.Status = e+1, []store.DeliveryStatus{store.DeliveryRetrying}, store.DeliveryRunning
	_, err = h.ts.DeliveryUpdate(h.ctx, stale)
	wantIs(t, "update at another epoch", err, store.ErrFenced)
	wantDelivery(t, "after an epoch-fenced update", h.get("s1", "d1"), want)

	// Epoch 0 and no From: unfenced. A zero NextAttemptAt stores zero.
	u = store.DeliveryUpdate{Space: "s1", ID: "d1", Status: store.DeliverySucceeded, Attempts: 2}
	want.Status, want.Attempts, want.LastError, want.NextAttemptAt = store.DeliverySucceeded, 2, "", time.Time{}
	wantDelivery(t, "unfenced", h.update(u), want)
	if got := h.get("s1", "d1"); !got.NextAttemptAt.IsZero() {
		t.Fatalf("zero next attempt stored as %s", got.NextAttemptAt)
	}

	_, err = h.ts.DeliveryUpdate(h.ctx, store.DeliveryUpdate{Space: "s1", ID: "nope", Epoch: e,
		From: []store.DeliveryStatus{store.DeliveryPending}, Status: store.DeliveryRunning})
	wantIs(t, "update of a missing delivery", err, store.ErrNotFound)
	_, err = h.ts.DeliveryUpdate(h.ctx, store.DeliveryUpdate{Space: "s2", ID: "d2", Status: store.DeliveryRunning})
	wantIs(t, "update in another space", err, store.ErrNotFound)

	// Another process takes the lease: the old epoch is fenced.
	e2 := h.lease("s1", "t", "p2", 60).Epoch
	if e2 != e+1 {
		t.Fatalf("stolen lease epoch %d, want %d", e2, e+1)
	}
	u = store.DeliveryUpdate{Space: "s1", ID: "d2", Epoch: e, From: []store.DeliveryStatus{store.DeliveryPending}, Status: store.DeliveryRunning}
	_, err = h.ts.DeliveryUpdate(h.ctx, u)
	wantIs(t, "update by the old holder", err, store.ErrFenced)
	u.Epoch = e2
	if got := h.update(u); got.Status != store.DeliveryRunning {
		t.Fatalf("update by the new holder = %s", js(got))
	}
}

func testDeliveryList(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	for _, sp := range []string{"s1", "s2"} {
		h.init(sp, "t", 0)
		h.init(sp, "u", 0)
	}
	et := h.lease("s1", "t", "p1", 0).Epoch
	eu := h.lease("s1", "u", "p1", 0).Epoch
	h.advance("s1",
		store.Advance{Trigger: "t", Epoch: et, From: 0, To: 10, Deliveries: []store.Delivery{
			dl("t", "b", 2), dl("t", "a", 2), dl("t", "c", 5), dl("t", "d", 9)}},
		store.Advance{Trigger: "u", Epoch: eu, From: 0, To: 10, Deliveries: []store.Delivery{
			dl("u", "e", 3), dl("u", "f", 5)}})
	e2 := h.lease("s2", "t", "p1", 0).Epoch
	h.advance("s2", store.Advance{Trigger: "t", Epoch: e2, From: 0, To: 10, Deliveries: []store.Delivery{in("s2", dl("t", "a", 1))}})
	h.setStatus("c", store.DeliveryRunning)
	h.setStatus("d", store.DeliveryFailed)
	h.setStatus("b", store.DeliveryFailed)
	h.setStatus("e", store.DeliveryParked)

	pos := func(seq int64, id string) store.DeliveryPosition { return store.DeliveryPosition{Seq: seq, ID: id} }
	cases := []struct {
		name string
		p    store.DeliveryListParams
		want []string
	}{
		{"all", store.DeliveryListParams{}, []string{"a", "b", "e", "c", "f", "d"}},
		{"trigger", store.DeliveryListParams{Trigger: "t"}, []string{"a", "b", "c", "d"}},
		{"status", store.DeliveryListParams{Statuses: []store.DeliveryStatus{store.DeliveryPending}}, []string{"a", "f"}},
		{"open", store.DeliveryListParams{Statuses: store.OpenDeliveryStatuses}, []string{"a", "c", "f"}},
		{"trigger and statuses", store.DeliveryListParams{Trigger: "t",
			Statuses: []store.DeliveryStatus{store.DeliveryRunning, store.DeliveryFailed}}, []string{"b", "c", "d"}},
		{"trigger, one stopped status", store.DeliveryListParams{Trigger: "t",
			Statuses: []store.DeliveryStatus{store.DeliveryFailed}}, []string{"b", "d"}},
		{"trigger, one stopped status, after", store.DeliveryListParams{Trigger: "t",
			Statuses: []store.DeliveryStatus{store.DeliveryFailed}, After: pos(2, "b")}, []string{"d"}},
		{"trigger, one stopped status, limit", store.DeliveryListParams{Trigger: "t",
			Statuses: []store.DeliveryStatus{store.DeliveryFailed}, Limit: 1}, []string{"b"}},
		{"trigger, one stopped status, none", store.DeliveryListParams{Trigger: "u",
			Statuses: []store.DeliveryStatus{store.DeliveryFailed}}, []string{}},
		{"trigger, stopped statuses", store.DeliveryListParams{Trigger: "t",
			Statuses: []store.DeliveryStatus{store.DeliveryParked, store.DeliveryFailed}, After: pos(2, "a")}, []string{"b", "d"}},
		{"stopped statuses", store.DeliveryListParams{
			Statuses: []store.DeliveryStatus{store.DeliveryFailed, store.DeliveryParked}}, []string{"b", "e", "d"}},
		{"open and stopped statuses", store.DeliveryListParams{
			Statuses: []store.DeliveryStatus{store.DeliveryPending, store.DeliveryParked}}, []string{"a", "e", "f"}},
		{"open and stopped statuses, after, limit", store.DeliveryListParams{
			Statuses: []store.DeliveryStatus{store.DeliveryParked, store.DeliveryRunning, store.DeliveryPending}, After: pos(2, "a"), Limit: 2},
			[]string{"e", "c"}},
		{"stopped statuses, limit", store.DeliveryListParams{
			Statuses: []store.DeliveryStatus{store.DeliveryParked, store.DeliveryFailed}, Limit: 2}, []string{"b", "e"}},
		{"stopped statuses, after", store.DeliveryListParams{
			Statuses: []store.DeliveryStatus{store.DeliveryFailed}, After: pos(2, "b")}, []string{"d"}},
		{"after a tie", store.DeliveryListParams{After: pos(2, "a")}, []string{"b", "e", "c", "f", "d"}},
		{"after", store.DeliveryListParams{After: pos(5, "c")}, []string{"f", "d"}},
		{"after, trigger", store.DeliveryListParams{Trigger: "u", After: pos(3, "e")}, []string{"f"}},
		{"limit", store.DeliveryListParams{Limit: 2}, []string{"a", "b"}},
		{"none left", store.DeliveryListParams{After: pos(9, "d")}, []string{}},
		{"no such trigger", store.DeliveryListParams{Trigger: "nope"}, []string{}},
	}
	for _, tc := range cases {
		tc.p.Space = "s1"
		if got := h.list(tc.p); !slices.Equal(got, tc.want) {
			t.Fatalf("%s: list %+v = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
	if got := h.list(store.DeliveryListParams{Space: "s2"}); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("list of s2 = %v", got)
	}

	// Paging by the last position visits everything once, in order.
	var paged []string
	p := store.DeliveryListParams{Space: "s1", Limit: 2}
	for range 10 {
		ds, err := h.ts.DeliveryList(h.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		paged = append(paged, deliveryIDs(ds)...)
		last := ds[len(ds)-1]
		p.After = pos(last.Seq, last.ID)
	}
	if want := []string{"a", "b", "e", "c", "f", "d"}; !slices.Equal(paged, want) {
		t.Fatalf("paged = %v, want %v", paged, want)
	}
}

func testDeliveryStats(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	h.init("s1", "t", 0)
	h.init("s1", "u", 0)
	e := h.lease("s1", "t", "p1", 0).Epoch
	ds := []store.Delivery{dl("t", "a", 2), dl("t", "b", 3), dl("t", "c", 4), dl("t", "d", 5), dl("t", "e", 6), dl("t", "f", 7)}
	for i, sec := range []int{20, 10, 30, 40, 50, 60} {
		ds[i].CreatedAt = ts(sec)
	}
	h.advance("s1", store.Advance{Trigger: "t", Epoch: e, From: 0, To: 10, Deliveries: ds})
	h.setStatus("b", store.DeliverySucceeded)
	h.setStatus("d", store.DeliveryRetrying)
	h.setStatus("e", store.DeliverySucceeded)
	// Trigger u's deliveries, in the same space, count for u alone.
	eu := h.lease("s1", "u", "p1", 0).Epoch
	h.advance("s1", store.Advance{Trigger: "u", Epoch: eu, From: 0, To: 10, Deliveries: []store.Delivery{dl("u", "g", 2), dl("u", "h", 3)}})
	h.setStatus("g", store.DeliveryParked)
	h.setStatus("h", store.DeliverySucceeded)

	// stats checks DeliveryStats and DeliveryBacklog (the same, less the
	// finished statuses).
	stats := func(what, trigger string, byStatus map[store.DeliveryStatus]int, oldest time.Time) {
		t.Helper()
		st, err := h.ts.DeliveryStats(h.ctx, "s1", trigger)
		if err != nil || !maps.Equal(st.ByStatus, byStatus) || !sameTime(st.OldestOpen, oldest) {
			t.Fatalf("%s: stats %+v, %v; want %v, oldest open %s", what, st, err, byStatus, oldest)
		}
		backlog := maps.Clone(byStatus)
		maps.DeleteFunc(backlog, func(s store.DeliveryStatus, _ int) bool { return !s.Open() && s != store.DeliveryParked })
		bl, err := h.ts.DeliveryBacklog(h.ctx, "s1", trigger)
		if err != nil || !maps.Equal(bl.ByStatus, backlog) || !sameTime(bl.OldestOpen, oldest) {
			t.Fatalf("%s: backlog %+v, %v; want %v, oldest open %s", what, bl, err, backlog, oldest)
		}
	}
	openThrough := func(what string, through int64, want int) {
		t.Helper()
		n, err := h.ts.DeliveriesOpenThrough(h.ctx, "s1", "t", through)
		if err != nil || n != want {
			t.Fatalf("%s: open through %d = %d, %v; want %d", what, through, n, err, want)
		}
	}
	stats("mixed", "t", map[store.DeliveryStatus]int{"pending": 3, "succeeded": 2, "retrying": 1}, ts(20))
	openThrough("mixed", 1, 0)
	openThrough("mixed", 3, 1)
	openThrough("mixed", 4, 2)
	openThrough("mixed", 100, 4)

	h.setStatus("a", store.DeliveryDiscarded)
	stats("oldest discarded", "t", map[store.DeliveryStatus]int{"pending": 2, "succeeded": 2, "retrying": 1, "discarded": 1}, ts(30))
	openThrough("oldest discarded", 3, 0)
	h.setStatus("c", store.DeliveryFailed)
	h.setStatus("d", store.DeliveryParked)
	h.setStatus("f", store.DeliveryParked)
	stats("none open", "t", map[store.DeliveryStatus]int{"succeeded": 2, "discarded": 1, "failed": 1, "parked": 2}, time.Time{})
	openThrough("none open", 100, 0)
	h.setStatus("d", store.DeliveryPending)
	stats("parked retried", "t", map[store.DeliveryStatus]int{"pending": 1, "succeeded": 2, "discarded": 1, "failed": 1, "parked": 1}, ts(40))
	stats("another trigger", "u", map[store.DeliveryStatus]int{"parked": 1, "succeeded": 1}, time.Time{})
	stats("no deliveries", "v", map[store.DeliveryStatus]int{}, time.Time{})
}

func testTriggerPrune(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	var prev *store.Record
	for seq := int64(1); seq <= 9; seq++ {
		c, rec := rawCommit(seq, store.EntityKey{Type: "task", ID: "t1"}, `{"a":1}`, prev, "")
		appendOne(t, h.st, "s1", c, rec)
		prev = &rec
	}
	for _, sp := range []string{"s1", "s2"} {
		h.init(sp, "t", 0)
		e := h.lease(sp, "t", "p1", 0).Epoch
		h.advance(sp, store.Advance{Trigger: "t", Epoch: e, From: 0, To: 9,
			Deliveries: []store.Delivery{in(sp, dl("t", "a", 2)), in(sp, dl("t", "b", 5)), in(sp, dl("t", "c", 9))},
			Failures:   []store.FilterFailure{{Trigger: "t", Seq: 3, Error: "x"}, {Trigger: "t", Seq: 6, Error: "y"}}})
	}
	if _, err := h.st.SpacePrune(h.ctx, "s1", 5); err != nil {
		t.Fatal(err)
	}
	if got := h.list(store.DeliveryListParams{Space: "s1"}); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("deliveries after prune = %v, want [c]", got)
	}
	if len(h.errorsAt("s1", 3)) != 0 || len(h.errorsAt("s1", 6)) != 1 {
		t.Fatalf("stance errors after prune: at 3 %v, at 6 %v", h.errorsAt("s1", 3), h.errorsAt("s1", 6))
	}
	if got := h.list(store.DeliveryListParams{Space: "s2"}); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("another space's deliveries after prune = %v", got)
	}
	if len(h.errorsAt("s2", 3)) != 1 {
		t.Fatal("pruning s1 removed a stance error of s2")
	}
	if st := h.state("s1", "t"); st.Cursor != 9 {
		t.Fatalf("pruning moved the cursor: %s", js(st))
	}
	if _, err := h.ts.DeliveryGet(h.ctx, "s1", "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("pruned delivery: %v, want ErrNotFound", err)
	}
}

// testDeliveryUpdateMany checks that several updates apply in one call,
// each fenced on its own terms.
func testDeliveryUpdateMany(t *testing.T, open OpenFunc) {
	h := newTrig(t, open)
	h.init("s1", "t", 0)
	e := h.lease("s1", "t", "p1", 0).Epoch
	d1, d2, d3 := dl("t", "d1", 3), dl("t", "d2", 4), dl("t", "d3", 5)
	h.advance("s1", store.Advance{Trigger: "t", Epoch: e, From: 0, To: 10, Deliveries: []store.Delivery{d1, d2, d3}})

	pending := []store.DeliveryStatus{store.DeliveryPending}
	us := []store.DeliveryUpdate{
		{Space: "s1", ID: "d1", Epoch: e, From: pending, Status: store.DeliverySucceeded, Attempts: 1},
		{Space: "s1", ID: "d2", Epoch: e + 1, From: pending, Status: store.DeliverySucceeded, Attempts: 1},
		{Space: "s1", ID: "nope", Epoch: e, From: pending, Status: store.DeliverySucceeded, Attempts: 1},
		{Space: "s1", ID: "d3", Epoch: e, From: pending, Status: store.DeliveryRetrying, Attempts: 1, LastError: "boom", NextAttemptAt: ts(30)},
	}
	errs, err := h.ts.DeliveryUpdateMany(h.ctx, us)
	if err != nil || len(errs) != len(us) {
		t.Fatalf("update many: %v (%d errors for %d updates)", err, len(errs), len(us))
	}
	if errs[0] != nil || errs[3] != nil {
		t.Fatalf("update many: unexpected errors %v", errs)
	}
	wantIs(t, "update at another epoch", errs[1], store.ErrFenced)
	wantIs(t, "update of a missing delivery", errs[2], store.ErrNotFound)
	want1, want3 := d1, d3
	want1.Status, want1.Attempts = store.DeliverySucceeded, 1
	want3.Status, want3.Attempts, want3.LastError, want3.NextAttemptAt = store.DeliveryRetrying, 1, "boom", ts(30)
	wantDelivery(t, "first update", h.get("s1", "d1"), want1)
	wantDelivery(t, "fenced update leaves it", h.get("s1", "d2"), d2)
	wantDelivery(t, "last update", h.get("s1", "d3"), want3)
	if errs, err := h.ts.DeliveryUpdateMany(h.ctx, nil); err != nil || len(errs) != 0 {
		t.Fatalf("update none: %v %v", errs, err)
	}

	// One delivery twice in a call: the updates apply in order, so the
	// second sees the first's status. No From: any status.
	running := []store.DeliveryStatus{store.DeliveryRunning}
	us = []store.DeliveryUpdate{
		{Space: "s1", ID: "d2", Epoch: e, From: pending, Status: store.DeliveryRunning, Attempts: 1},
		{Space: "s1", ID: "d3", Status: store.DeliveryFailed, Attempts: 2, LastError: "gave up"},
		{Space: "s1", ID: "d2", Epoch: e, From: running, Status: store.DeliverySucceeded, Attempts: 1},
		{Space: "s1", ID: "d2", Epoch: e, From: running, Status: store.DeliveryFailed, Attempts: 1},
	}
	errs, err = h.ts.DeliveryUpdateMany(h.ctx, us)
	if err != nil || len(errs) != len(us) || errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatalf("update one delivery twice: %v, %v", errs, err)
	}
	wantIs(t, "an update after the delivery left its from status", errs[3], store.ErrFenced)
	want2 := d2
	want2.Status, want2.Attempts = store.DeliverySucceeded, 1
	want3.Status, want3.Attempts, want3.LastError, want3.NextAttemptAt = store.DeliveryFailed, 2, "gave up", time.Time{}
	wantDelivery(t, "updated twice", h.get("s1", "d2"), want2)
	wantDelivery(t, "updated from any status", h.get("s1", "d3"), want3)
}
