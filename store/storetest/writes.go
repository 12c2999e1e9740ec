package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// testSpaces covers space rows: creation, numbering per space, listing.
func testSpaces(t *testing.T, open OpenFunc) {
	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, open, changelog.Options{})
		sp := h.spaceRow("s")
		if sp.ID != "s" || sp.Head != 0 || sp.Horizon != 0 || sp.Epoch == "" {
			t.Fatalf("new space = %s, want space s, head 0, horizon 0, an epoch", js(sp))
		}
		_, err := h.log.CreateSpace(h.ctx, "s")
		wantCode(t, "create existing space", err, problem.Conflict)
		again, err := h.log.EnsureSpace(h.ctx, "s")
		if err != nil || again.ID != "s" || again.Epoch != sp.Epoch || again.Head != 0 {
			t.Fatalf("ensure existing space = %s, %v; want %s", js(again), err, js(sp))
		}
		if _, err := h.log.EnsureSpace(h.ctx, "b"); err != nil {
			t.Fatalf("ensure new space: %v", err)
		}
		h.createSpace("a")
		list, err := h.log.Spaces(h.ctx)
		if err != nil {
			t.Fatalf("spaces: %v", err)
		}
		var ids []string
		for _, s := range list {
			ids = append(ids, s.ID)
		}
		if !sameStrings(ids, []string{"a", "b", "s"}) {
			t.Fatalf("spaces = %v, want [a b s]", ids)
		}
		if _, err := h.log.Space(h.ctx, "missing"); !isNotFound(err) {
			t.Fatalf("missing space: err %v, want not_found", err)
		}
		_, err = h.log.Write(h.ctx, changelog.WriteRequest{Space: "missing", Provenance: owner,
			Mutations: []changelog.Mutation{put("task", "t1", `{"a":1}`)}})
		if !isNotFound(err) {
			t.Fatalf("write to a missing space: err %v, want not_found", err)
		}
		if _, err := h.log.Read(h.ctx, "missing", 0, changelog.Filter{}, 10); !isNotFound(err) {
			t.Fatalf("read of a missing space: err %v, want not_found", err)
		}
		if _, err := h.log.Pull(h.ctx, "missing", 0, 10); !isNotFound(err) {
			t.Fatalf("pull of a missing space: err %v, want not_found", err)
		}
		p, err := h.log.Read(h.ctx, "s", 0, changelog.Filter{}, 10)
		if err != nil || len(p.Rows) != 0 || p.Cursor != 0 || p.Head != 0 {
			t.Fatalf("read empty space = %s, %v; want no rows, cursor 0, head 0", js(p), err)
		}
		pp, err := h.log.Pull(h.ctx, "s", 0, 10)
		if err != nil || len(pp.Commits) != 0 || pp.NextCursor != 0 || pp.HasMore {
			t.Fatalf("pull empty space = %s, %v; want empty page at 0", js(pp), err)
		}
	})
	t.Run("Independent", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, open, changelog.Options{})
		h.createSpace("alpha")
		h.createSpace("beta")
		writeIn := func(space, id string) int64 {
			res := h.writeReq(changelog.WriteRequest{Space: space, Mutations: []changelog.Mutation{put("task", id, `{"n":1}`)}})
			return res.Receipts[0].Seq
		}
		got := []int64{writeIn("alpha", "a1"), writeIn("beta", "b1"), writeIn("alpha", "a2"), writeIn("beta", "b2"), writeIn("alpha", "a3")}
		if want := []int64{1, 1, 2, 2, 3}; !reflect.DeepEqual(got, want) {
			t.Fatalf("seqs = %v, want %v", got, want)
		}
		for space, want := range map[string][]string{"alpha": {"a1", "a2", "a3"}, "beta": {"b1", "b2"}, "s": nil} {
			p, err := h.log.Read(h.ctx, space, 0, changelog.Filter{}, 10)
			if err != nil {
				t.Fatalf("read %s: %v", space, err)
			}
			var ids []string
			for i, r := range p.Rows {
				ids = append(ids, r.EntityID)
				if r.Seq != int64(i+1) {
					t.Fatalf("space %s row %d has seq %d", space, i, r.Seq)
				}
			}
			if !sameStrings(ids, want) || p.Head != int64(len(want)) || p.Cursor != p.Head {
				t.Fatalf("space %s rows %v head %d cursor %d, want %v", space, ids, p.Head, p.Cursor, want)
			}
			if sp := h.spaceRow(space); sp.Head != int64(len(want)) || sp.Horizon != 0 {
				t.Fatalf("space %s = %s, want head %d horizon 0", space, js(sp), len(want))
			}
		}
	})
}

// testWrites covers the wire row, the no-op rule, receipts, idempotency and
// group commit.
func testWrites(t *testing.T, open OpenFunc) {
	t.Run("WireRow", func(t *testing.T) { t.Parallel(); testWireRow(t, open) })
	t.Run("Noop", func(t *testing.T) { t.Parallel(); testNoop(t, open) })
	t.Run("Idempotency", func(t *testing.T) { t.Parallel(); testIdempotency(t, open) })
	t.Run("GroupCommit", func(t *testing.T) { t.Parallel(); testGroupCommit(t, open) })
}

func testWireRow(t *testing.T, open OpenFunc) {
	h := newHarness(t, open, changelog.Options{})
	ts := epoch0.UTC().Truncate(time.Microsecond)
	res := h.write(withID(put("task", "t1", `{"title":"x","zz":1,"dueAt":"2026-12-01","meta":{"b":1,"a":2}}`), "m-1"))
	r := res.Receipts[0]
	wantReceipt(t, "create", r, store.Receipt{MutationID: "m-1", Status: store.ReceiptApplied, Seq: 1, Version: 1,
		Accepted: []string{"dueAt", "meta", "title", "zz"}})
	if !reflect.DeepEqual(res.Created, []bool{true}) || res.LastSeq != 1 || res.Entities[0] == nil || res.Entities[0].Version != 1 {
		t.Fatalf("create result = %s, want created, last seq 1, entity at version 1", js(res))
	}
	wantCanon := `{"dueAt":"2026-12-01","meta":{"a":2,"b":1},"title":"x","zz":1}`
	wantJSON(t, "proposed values", r.Proposed, wantCanon)
	wantBytes(t, "result entity properties", res.Entities[0].Properties, wantCanon)

	// The wire row: exactly seven keys, ts in UTC with microseconds.
	row := h.rowAt(1)
	raw, err := json.Marshal(row)
	if err != nil {
		t.Fatalf("marshal row: %v", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("unmarshal row: %v", err)
	}
	var keys []string
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if want := []string{"actor", "entityId", "op", "payload", "seq", "ts", "type"}; !sameStrings(keys, want) {
		t.Fatalf("row keys = %v, want %v", keys, want)
	}
	wantBytes(t, "row ts", fields["ts"], `"2026-08-04T10:00:00.183742Z"`)
	if row.Seq != 1 || row.Actor != "owner" || row.Op != "put" || row.EntityID != "t1" || row.Type != "task" || !row.TS.Equal(ts) {
		t.Fatalf("row = %s", raw)
	}
	wantJSON(t, "create payload", row.Payload, `{"created":true,"properties":["dueAt","meta","title","zz"]}`)

	rec := h.get("task", "t1")
	wantBytes(t, "stored properties", rec.Properties, wantCanon)
	if rec.Version != 1 || len(rec.Links) != 0 || !rec.CreatedAt.Equal(ts) || !rec.UpdatedAt.Equal(ts) {
		t.Fatalf("record = %s, want version 1, no links, created and updated at %s", js(rec), ts)
	}

	c := h.commitAt(1)
	wantSameRow(t, c.Row, row)
	if len(c.Changes) != 1 {
		t.Fatalf("create commit has %d changes, want 1", len(c.Changes))
	}
	ch := c.Changes[0]
	if ch.Ordinal != 0 || ch.Kind != store.ChangeCreated || ch.Type != "task" || ch.ID != "t1" || ch.Version != 1 || ch.Before != nil || ch.After == nil {
		t.Fatalf("create change = %s", js(ch))
	}
	wantBytes(t, "change after properties", ch.After.Properties, wantCanon)
	if !reflect.DeepEqual(normReceipt(t, c.Receipt), normReceipt(t, r)) {
		t.Fatalf("commit receipt %s differs from write receipt %s", js(c.Receipt), js(r))
	}
	if want := (store.Provenance{Actor: "owner", Via: "api", RequestID: "req-1", MutationID: "m-1"}); c.Provenance != want {
		t.Fatalf("provenance = %s, want %s", js(c.Provenance), js(want))
	}

	// An update of every property: no created flag, before and after images.
	h.clock.Advance(time.Second)
	res = h.write(put("task", "t1", `{"title":"y","zz":2,"dueAt":"2026-12-02","meta":{"a":3}}`))
	wantReceipt(t, "update", res.Receipts[0], store.Receipt{Status: store.ReceiptApplied, Seq: 2, Version: 2,
		Accepted: []string{"dueAt", "meta", "title", "zz"}})
	if !reflect.DeepEqual(res.Created, []bool{false}) || res.LastSeq != 2 {
		t.Fatalf("update result = %s, want not created, last seq 2", js(res))
	}
	wantJSON(t, "update payload", h.rowAt(2).Payload, `{"properties":["dueAt","meta","title","zz"]}`)
	c = h.commitAt(2)
	ch = c.Changes[0]
	if ch.Kind != store.ChangeUpdated || ch.Version != 2 || ch.Before == nil || ch.Before.Version != 1 || ch.After == nil || ch.After.Version != 2 {
		t.Fatalf("update change = %s", js(ch))
	}
	wantBytes(t, "before image", ch.Before.Properties, wantCanon)
	rec = h.get("task", "t1")
	wantBytes(t, "updated properties", rec.Properties, `{"dueAt":"2026-12-02","meta":{"a":3},"title":"y","zz":2}`)
	if !rec.CreatedAt.Equal(ts) || !rec.UpdatedAt.Equal(ts.Add(time.Second)) || rec.Version != 2 {
		t.Fatalf("updated record = %s, want createdAt %s, updatedAt one second later, version 2", js(rec), ts)
	}
	if !rec.UpdatedAt.Equal(h.rowAt(2).TS) {
		t.Fatalf("updatedAt %s differs from commit ts %s", rec.UpdatedAt, h.rowAt(2).TS)
	}
	// put replaces: properties it omits are gone.
	h.apply(put("task", "t1", `{"title":"z"}`), 3)
	wantBytes(t, "replaced properties", h.get("task", "t1").Properties, `{"title":"z"}`)
	h.wantHead(3)
}

func testNoop(t *testing.T, open OpenFunc) {
	h := newHarness(t, open, changelog.Options{})
	h.apply(put("task", "t1", `{"title":"x","n":1}`), 1)
	h.apply(link("task", "t1", "assignee", "user", "u1"), 2)
	h.apply(put("task", "t2", `{"title":"gone"}`), 3)
	h.apply(del("task", "t2"), 4)
	for _, tc := range []struct {
		name    string
		m       changelog.Mutation
		version int64
	}{
		{"identical put", put("task", "t1", `{"n":1,"title":"x"}`), 2},
		{"identical patch", patch("task", "t1", `{"title":"x"}`), 2},
		{"patch deleting an absent property", patch("task", "t1", `{"missing":null}`), 2},
		{"empty patch", patch("task", "t1", `{}`), 2},
		{"link twice", link("task", "t1", "assignee", "user", "u1"), 2},
		{"unlink absent", unlink("task", "t1", "assignee", "user", "u9"), 2},
		{"delete of a tombstone", del("task", "t2"), -1},
	} {
		res := h.write(withID(tc.m, "noop-"+tc.name))
		// Which names a no-op "accepts" is the Log's choice; it appends nothing.
		wantReceipt(t, tc.name, res.Receipts[0], store.Receipt{MutationID: "noop-" + tc.name, Status: store.ReceiptNoop, Version: tc.version,
			Accepted: res.Receipts[0].Accepted})
		if res.LastSeq != 4 {
			t.Fatalf("%s: last seq %d, want the head 4", tc.name, res.LastSeq)
		}
		h.wantHead(4)
	}
	// A batch of no-ops appends nothing either.
	res := h.write(put("task", "t1", `{"title":"x","n":1}`), del("task", "t2"))
	if res.Receipts[0].Status != store.ReceiptNoop || res.Receipts[1].Status != store.ReceiptNoop || res.LastSeq != 4 {
		t.Fatalf("no-op batch = %s", js(res))
	}
	h.wantHead(4)
	// The next applied write takes the next seq: nothing was consumed.
	h.apply(patch("task", "t1", `{"n":2}`), 5)
	wantBytes(t, "record after no-ops", h.get("task", "t1").Properties, `{"n":2,"title":"x"}`)
}

func testIdempotency(t *testing.T, open OpenFunc) {
	h := newHarness(t, open, changelog.Options{IdempotencyWindow: time.Hour})
	replay := func(what string, m changelog.Mutation, first store.Receipt, head int64) {
		t.Helper()
		res := h.write(m)
		if !reflect.DeepEqual(normReceipt(t, res.Receipts[0]), normReceipt(t, first)) {
			t.Fatalf("%s: retry receipt %s, want the original %s", what, js(res.Receipts[0]), js(first))
		}
		h.wantHead(head)
	}
	mA := withID(put("task", "t1", `{"title":"x"}`), "m-a")
	first := h.write(mA)
	rA := first.Receipts[0]
	wantReceipt(t, "m-a", rA, store.Receipt{MutationID: "m-a", Status: store.ReceiptApplied, Seq: 1, Version: 1, Accepted: []string{"title"}})
	again := h.write(mA)
	if !reflect.DeepEqual(normReceipt(t, again.Receipts[0]), normReceipt(t, rA)) || again.Entities[0] == nil || again.Entities[0].Version != 1 {
		t.Fatalf("retry of m-a = %s, want %s with the entity at version 1", js(again), js(first))
	}
	h.wantHead(1)

	// A no-op receipt replays even after the mutation would apply.
	mN := withID(put("task", "t1", `{"title":"x"}`), "m-n")
	rN := h.one(mN)
	wantReceipt(t, "m-n", rN, store.Receipt{MutationID: "m-n", Status: store.ReceiptNoop, Version: 1, Accepted: rN.Accepted})
	h.apply(put("task", "t1", `{"title":"y"}`), 2)
	replay("no-op retry", mN, rN, 2)

	// A rejected receipt replays even after the mutation would apply.
	mR := ifVersion(withID(patch("task", "t1", `{"title":"z"}`), "m-r"), 3)
	rR := h.one(mR)
	wantReceipt(t, "m-r", rR, store.Receipt{MutationID: "m-r", Status: store.ReceiptRejected, Version: -1, Reason: reason(problem.Conflict)})
	h.apply(put("task", "t1", `{"title":"w"}`), 3)
	replay("rejected retry", mR, rR, 3)

	// Inside the window the original stands; past it the id is new again.
	h.clock.Advance(30 * time.Minute)
	replay("retry inside the window", mA, rA, 3)
	h.clock.Advance(2 * time.Hour)
	r := h.one(mA)
	wantReceipt(t, "m-a past the window", r, store.Receipt{MutationID: "m-a", Status: store.ReceiptApplied, Seq: 4, Version: 4, Accepted: []string{"title"}})
	replay("retry of the renewed id", mA, r, 4)
	wantBytes(t, "record", h.get("task", "t1").Properties, `{"title":"x"}`)

	// Concurrent retries of one id, possibly in one group, apply it once.
	mD := withID(put("task", "t-dup", `{"v":1}`), "m-dup")
	receipts := make([]store.Receipt, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range receipts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := h.log.Write(h.ctx, changelog.WriteRequest{Space: "s", Provenance: owner, Mutations: []changelog.Mutation{mD}})
			if errs[i] = err; err == nil {
				receipts[i] = res.Receipts[0]
			}
		}()
	}
	wg.Wait()
	for i, r := range receipts {
		if errs[i] != nil {
			t.Fatalf("concurrent retry %d: %v", i, errs[i])
		}
		wantReceipt(t, "concurrent retry", r, store.Receipt{MutationID: "m-dup", Status: store.ReceiptApplied, Seq: 5, Version: 5, Accepted: []string{"v"}})
	}
	h.wantHead(5)
}

func testGroupCommit(t *testing.T, open OpenFunc) {
	const writers, each = 16, 20
	h := newHarness(t, open, changelog.Options{})
	seqs := make(chan int64, writers*each)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				res, err := h.log.Write(h.ctx, changelog.WriteRequest{Space: "s", Provenance: owner,
					Mutations: []changelog.Mutation{put("task", fmt.Sprintf("w%d-%d", w, i%3), fmt.Sprintf(`{"i":%d}`, i))}})
				if err != nil {
					errs <- err
					return
				}
				if r := res.Receipts[0]; r.Status != store.ReceiptApplied || r.Seq < 1 {
					errs <- fmt.Errorf("writer %d: receipt %s", w, js(r))
					return
				}
				seqs <- res.Receipts[0].Seq
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(seqs)
	for err := range errs {
		t.Fatal(err)
	}
	wantExactlyOnce(t, seqs, writers*each)
	h.wantHead(writers * each)
	p, err := h.log.Pull(h.ctx, "s", 0, writers*each)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range p.Commits {
		if c.Seq != int64(i+1) {
			t.Fatalf("commit %d has seq %d", i, c.Seq)
		}
	}
	if len(p.Commits) != writers*each || p.HasMore {
		t.Fatalf("pull returned %d commits, hasMore %v", len(p.Commits), p.HasMore)
	}
}

// wantExactlyOnce fails unless the channel held every seq 1..n once.
func wantExactlyOnce(t *testing.T, seqs <-chan int64, n int) {
	t.Helper()
	seen := make(map[int64]int, n)
	for s := range seqs {
		seen[s]++
	}
	for s := int64(1); s <= int64(n); s++ {
		if seen[s] != 1 {
			t.Fatalf("seq %d acknowledged %d times, want once", s, seen[s])
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct seqs, want %d", len(seen), n)
	}
}
