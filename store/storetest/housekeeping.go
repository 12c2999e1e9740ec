package storetest

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// testHousekeeping covers what retention housekeeping needs of a driver
// (SpaceSeqBefore, ReceiptsExpire) and Log.Housekeep over it.
func testHousekeeping(t *testing.T, open OpenFunc) {
	t.Run("SeqBefore", func(t *testing.T) { t.Parallel(); testRawSeqBefore(t, open) })
	t.Run("ReceiptsExpire", func(t *testing.T) { t.Parallel(); testRawReceiptsExpire(t, open) })
	t.Run("Housekeep", func(t *testing.T) { t.Parallel(); testHousekeep(t, open) })
}

// testRawSeqBefore checks the max-age walk: it stops at the first commit
// not older than the bound, even when older ones follow it.
func testRawSeqBefore(t *testing.T, open OpenFunc) {
	st := open(t)
	for _, id := range []string{"s", "empty"} {
		if _, err := st.SpaceCreate(ctx0, id, "e"); err != nil {
			t.Fatal(err)
		}
	}
	// Commit timestamps, by seq: 3 is younger than 4 and 5 (clock skew
	// between processes).
	stamps := []int{1, 2, 10, 3, 4}
	var prev *store.Record
	for i, sec := range stamps {
		c, rec := rawCommit(int64(i+1), store.EntityKey{Type: "task", ID: "t1"}, `{"a":1}`, prev, "")
		c.TS = ts(sec)
		appendOne(t, st, "s", c, rec)
		prev = &rec
	}
	seqBefore := func(space string, before time.Time, want int64) {
		t.Helper()
		got, err := st.SpaceSeqBefore(ctx0, space, before)
		if err != nil || got != want {
			t.Fatalf("SpaceSeqBefore(%s, %s) = %d, %v; want %d", space, before, got, err, want)
		}
	}
	seqBefore("s", ts(0), 0)
	seqBefore("s", ts(1), 0) // a commit at the bound is not older
	seqBefore("s", ts(2), 1)
	seqBefore("s", ts(5), 2) // commit 3 stops the walk; 4 and 5 are older
	seqBefore("s", ts(11), 5)
	seqBefore("empty", ts(100), 0)
	if _, err := st.SpacePrune(ctx0, "s", 3); err != nil {
		t.Fatal(err)
	}
	seqBefore("s", ts(0), 3) // the horizon: nothing retained is older
	seqBefore("s", ts(4), 4)
	if _, err := st.SpacePrune(ctx0, "s", 5); err != nil {
		t.Fatal(err)
	}
	seqBefore("s", ts(100), 5)
	if _, err := st.SpaceSeqBefore(ctx0, "nope", ts(0)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SpaceSeqBefore of a missing space: err %v, want ErrNotFound", err)
	}
}

// testRawReceiptsExpire checks that expiry deletes the oldest receipts of
// every space, at most limit per call, and leaves commits alone.
func testRawReceiptsExpire(t *testing.T, open OpenFunc) {
	st := open(t)
	stored := map[string]map[string]int{ // space -> mutation id -> created second
		"a": {"a1": 1, "a2": 2, "a5": 5},
		"b": {"b1": 1, "b3": 3, "b10": 10},
	}
	for _, space := range []string{"a", "b"} {
		if _, err := st.SpaceCreate(ctx0, space, "e"); err != nil {
			t.Fatal(err)
		}
		putReceipts(t, st, space, stored[space])
	}
	// An applied receipt, stored with its commit at ts(1).
	c, rec := rawCommit(1, store.EntityKey{Type: "task", ID: "t1"}, `{"a":1}`, nil, "c1")
	appendOne(t, st, "a", c, rec)

	expire := func(before time.Time, limit, want int) {
		t.Helper()
		n, err := st.ReceiptsExpire(ctx0, before, limit)
		if err != nil || n != want {
			t.Fatalf("ReceiptsExpire(%s, %d) = %d, %v; want %d", before, limit, n, err, want)
		}
	}
	expire(ts(1), 10, 0) // nothing is older than ts(1)
	expire(ts(5), 0, 0)
	expire(ts(5), 2, 2) // two of a1, b1, c1
	expire(ts(5), 10, 3)
	expire(ts(5), 10, 0)
	wantReceipts(t, st, "a", "a5")
	wantReceipts(t, st, "b", "b10")
	cs, err := st.Commits(ctx0, store.CommitsParams{Space: "a", Limit: 10})
	if err != nil || len(cs) != 1 || cs[0].Receipt.MutationID != "c1" {
		t.Fatalf("commits after receipt expiry = %s, %v; want commit 1 with its receipt", js(cs), err)
	}
	expire(ts(11), 10, 2)
	wantReceipts(t, st, "a")
}

// putReceipts stores no-op receipts created at the given seconds.
func putReceipts(t *testing.T, st store.Store, space string, ids map[string]int) {
	t.Helper()
	tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: space})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx0) }()
	for id, sec := range ids {
		r := store.StoredReceipt{MutationID: id, Receipt: store.Receipt{MutationID: id, Status: store.ReceiptNoop}, CreatedAt: ts(sec)}
		if err := tx.ReceiptPut(ctx0, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx0); err != nil {
		t.Fatal(err)
	}
}

// receiptIDs are every mutation id the expiry test stores.
var receiptIDs = []string{"a1", "a2", "a5", "b1", "b3", "b10", "c1"}

// wantReceipts fails unless space's stored receipts (of any age) are ids.
func wantReceipts(t *testing.T, st store.Store, space string, ids ...string) {
	t.Helper()
	tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: space, MutationIDs: receiptIDs, ReceiptsSince: ts(-1000)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx0) }()
	got := tx.Receipts()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	if !maps.EqualFunc(got, want, func(_ store.StoredReceipt, _ bool) bool { return true }) {
		t.Fatalf("receipts of %s = %s, want %v", space, js(got), ids)
	}
}

// testHousekeep drives Log.Housekeep with a fake clock: commits one
// minute apart, receipts kept for an hour.
func testHousekeep(t *testing.T, open OpenFunc) {
	h := newHarness(t, open, changelog.Options{IdempotencyWindow: time.Hour})
	h.createSpace("b")
	for i := 1; i <= 10; i++ {
		m := put("task", fmt.Sprintf("t%d", i), `{"n":1}`)
		m.MutationID = fmt.Sprintf("m%d", i)
		h.apply(m, int64(i))
		h.clock.Advance(time.Minute)
	}
	for i := 1; i <= 3; i++ {
		h.writeReq(changelog.WriteRequest{Space: "b", Mutations: []changelog.Mutation{put("note", fmt.Sprintf("n%d", i), `{}`)}})
	}
	// Now: commits of s at +0..+9 min, of b at +10 min; the clock at +10.
	steps := []struct {
		name    string
		policy  changelog.Retention
		advance time.Duration
		pruned  map[string]int64
		commits int64
		expired int
	}{
		{"no policy", changelog.Retention{}, 0, map[string]int64{}, 0, 0},
		{"max rows", changelog.Retention{MaxRows: 4}, 0, map[string]int64{"s": 6}, 6, 0},
		{"max rows again", changelog.Retention{MaxRows: 4}, 0, map[string]int64{}, 0, 0},
		// Older than +6:30 are commits 1..7: max age prunes further.
		{"max age wins", changelog.Retention{MaxAge: 3*time.Minute + 30*time.Second, MaxRows: 4}, 0, map[string]int64{"s": 7}, 1, 0},
		{"max rows wins", changelog.Retention{MaxAge: 3*time.Minute + 30*time.Second, MaxRows: 1}, 0, map[string]int64{"s": 9, "b": 2}, 4, 0},
		// At +68:30 the receipts of m1..m9 (created up to +8) are past
		// the hour; m10's (+9) is not, until a minute later.
		{"receipts", changelog.Retention{}, 58*time.Minute + 30*time.Second, map[string]int64{}, 0, 9},
		{"max age, everything", changelog.Retention{MaxAge: time.Minute}, time.Minute, map[string]int64{"s": 10, "b": 3}, 2, 1},
	}
	for _, step := range steps {
		h.clock.Advance(step.advance)
		rep, err := h.log.Housekeep(h.ctx, step.policy)
		if err != nil {
			t.Fatalf("%s: housekeep: %v", step.name, err)
		}
		if !maps.Equal(rep.Pruned, step.pruned) || rep.PrunedCommits != step.commits || rep.ReceiptsExpired != step.expired {
			t.Fatalf("%s: report %s, want pruned %v (%d commits), %d receipts expired", step.name, js(rep), step.pruned, step.commits, step.expired)
		}
	}
	for id, head := range map[string]int64{"s": 10, "b": 3} {
		if sp := h.spaceRow(id); sp.Head != head || sp.Horizon != head {
			t.Fatalf("space %s after housekeeping = %s, want head and horizon %d", id, js(sp), head)
		}
	}
}
