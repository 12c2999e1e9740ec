package storetest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// testPull covers raw pulls (seed 000): whole commits, a soft budget in
// changes, the cursor and hasMore, and invalid arguments.
func testPull(t *testing.T, open OpenFunc) {
	t.Parallel()
	h := newHarness(t, open, changelog.Options{})
	h.apply(put("task", "a", `{"x":1}`), 1)
	h.apply(put("task", "b", `{"y":1}`), 2)
	h.apply(merge("task", "a", "b"), 3)
	trig := store.Provenance{Actor: "trigger:t1", Via: "trigger", Trigger: "t1", Delivery: "d1", CausedBy: 3, Depth: 1,
		Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	h.writeReq(changelog.WriteRequest{Provenance: trig, Mutations: []changelog.Mutation{withID(put("task", "c", `{"z":1}`), "m-4")}})
	h.apply(put("task", "d", `{"w":1}`), 5)

	for _, tc := range []struct {
		after   int64
		limit   int
		seqs    []int64
		next    int64
		hasMore bool
	}{
		{0, 1, []int64{1}, 1, true},
		{0, 2, []int64{1, 2}, 2, true},
		{0, 3, []int64{1, 2}, 2, true},
		{0, 4, []int64{1, 2, 3}, 3, true},
		{2, 1, []int64{3}, 3, true},
		{2, 2, []int64{3}, 3, true},
		{2, 3, []int64{3, 4}, 4, true},
		{2, 4, []int64{3, 4, 5}, 5, false},
		{0, 100, []int64{1, 2, 3, 4, 5}, 5, false},
		{4, 1, []int64{5}, 5, false},
		{5, 10, nil, 5, false},
	} {
		p, err := h.log.Pull(h.ctx, "s", tc.after, tc.limit)
		if err != nil {
			t.Fatalf("pull(%d, %d): %v", tc.after, tc.limit, err)
		}
		var seqs []int64
		for _, c := range p.Commits {
			seqs = append(seqs, c.Seq)
			wantWholeCommit(t, h, c)
		}
		if !slices.Equal(seqs, tc.seqs) || p.NextCursor != tc.next || p.HasMore != tc.hasMore {
			t.Fatalf("pull(%d, %d) = commits %v next %d hasMore %v; want %v next %d hasMore %v",
				tc.after, tc.limit, seqs, p.NextCursor, p.HasMore, tc.seqs, tc.next, tc.hasMore)
		}
	}
	// Without receipts: the same commits, receipts zero, a page of many
	// commits (decoded in parallel) in order.
	full, err := h.log.Pull(h.ctx, "s", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	lean, err := h.log.PullWith(h.ctx, "s", 0, 100, changelog.PullOptions{NoReceipts: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(lean.Commits) != len(full.Commits) || lean.NextCursor != full.NextCursor {
		t.Fatalf("pull without receipts: %d commits next %d, want %d next %d", len(lean.Commits), lean.NextCursor, len(full.Commits), full.NextCursor)
	}
	for i, c := range lean.Commits {
		want := full.Commits[i]
		want.Receipt = store.Receipt{}
		if !reflect.DeepEqual(c, want) {
			t.Fatalf("pull without receipts: commit %d = %s, want %s", c.Seq, js(c), js(want))
		}
	}
	c := h.commitAt(4)
	if want := trig; c.Provenance != func() store.Provenance { want.MutationID = "m-4"; return want }() {
		t.Fatalf("provenance = %s, want %s with mutation id m-4", js(c.Provenance), js(trig))
	}
	if c.Actor != "trigger:t1" || c.Receipt.MutationID != "m-4" || c.Receipt.Status != store.ReceiptApplied || c.Receipt.Seq != 4 {
		t.Fatalf("commit 4 = %s", js(c))
	}
	for _, tc := range []struct {
		after int64
		limit int
	}{{-1, 10}, {6, 10}, {0, 0}, {0, -1}} {
		_, err := h.log.Pull(h.ctx, "s", tc.after, tc.limit)
		wantCode(t, fmt.Sprintf("pull(%d, %d)", tc.after, tc.limit), err, problem.BadRequest)
	}
	h.wantRawPull()
	h.wantRecycledRead(changelog.Filter{Types: []string{"esc"}}, changelog.Filter{ExcludeTypes: []string{"esc"}}, changelog.Filter{Q: "b"})
}

// wantWholeCommit checks a pulled commit: ordinals, versions, receipt,
// and that its row is the wire row Read returns.
func wantWholeCommit(t *testing.T, h *harness, c store.Commit) {
	t.Helper()
	if len(c.Changes) == 0 {
		t.Fatalf("commit %d has no changes", c.Seq)
	}
	for i, ch := range c.Changes {
		if ch.Ordinal != i || ch.Version != c.Seq {
			t.Fatalf("commit %d change %d = %s, want ordinal %d at version %d", c.Seq, i, js(ch), i, c.Seq)
		}
	}
	if c.Receipt.Status != store.ReceiptApplied || c.Receipt.Seq != c.Seq {
		t.Fatalf("commit %d receipt = %s", c.Seq, js(c.Receipt))
	}
	wantSameRow(t, c.Row, h.rowAt(c.Seq))
}

var (
	rowTypes  = []string{"task", "user", "note"}
	rowActors = []string{"owner", "alice", "bob"}
)

// writeRows writes 32 rows of three types, three actors and five ops; two
// of them mention "needle" (an entity id, a property name).
func writeRows(t *testing.T, h *harness) {
	t.Helper()
	visits := map[string]int{}
	for i := range 30 {
		typ := rowTypes[i%3]
		id := fmt.Sprintf("%s-%d", typ, (i/3)%3)
		var m changelog.Mutation
		switch visits[typ+"/"+id] % 4 {
		case 0:
			m = put(typ, id, fmt.Sprintf(`{"n":%d}`, i))
		case 1:
			m = patch(typ, id, fmt.Sprintf(`{"n":%d}`, i))
		case 2:
			m = link(typ, id, "r", "user", fmt.Sprintf("u%d", i))
		case 3:
			m = del(typ, id)
		}
		visits[typ+"/"+id]++
		if r := h.writeAs(rowActors[(i/2)%3], m).Receipts[0]; r.Seq != int64(i+1) {
			t.Fatalf("row %d: receipt %s", i+1, js(r))
		}
	}
	h.writeAs("bob", put("note", "needle-box", `{"n":1}`))
	h.writeAs("alice", put("task", "task-9", `{"needleCount":1}`))
	h.wantHead(32)
}

// refMatch is the suite's own reading of a filter (DESIGN §4).
func refMatch(f changelog.Filter, r store.Row) bool {
	in := slices.Contains[[]string]
	switch {
	case len(f.Types) > 0 && !in(f.Types, r.Type),
		len(f.Ops) > 0 && !in(f.Ops, r.Op),
		len(f.Actors) > 0 && !in(f.Actors, r.Actor),
		in(f.ExcludeTypes, r.Type), in(f.ExcludeOps, r.Op), in(f.ExcludeActors, r.Actor),
		f.EntityType != "" && (r.Type != f.EntityType || r.EntityID != f.EntityID):
		return false
	}
	if f.Q != "" {
		hay := strings.ToLower(r.Type + "\x00" + r.EntityID + "\x00" + r.Actor + "\x00" + string(r.Payload))
		if !strings.Contains(hay, strings.ToLower(f.Q)) {
			return false
		}
	}
	return f.Allow == nil || f.Allow(&r)
}

// testReadHistory covers forward reads and backward history with every
// filter, their cursors and the scan bound.
func testReadHistory(t *testing.T, open OpenFunc) {
	const maxScan = 10
	h := newHarness(t, open, changelog.Options{MaxScan: maxScan})
	writeRows(t, h)
	all := drainRead(t, h, changelog.Filter{}, 100, 0)
	if len(all) != 32 {
		t.Fatalf("unfiltered read returned %d rows, want 32", len(all))
	}
	for i, r := range all {
		if r.Seq != int64(i+1) {
			t.Fatalf("unfiltered read: row %d has seq %d", i, r.Seq)
		}
	}
	p, err := h.log.Read(h.ctx, "s", 32, changelog.Filter{}, 10)
	if err != nil || len(p.Rows) != 0 || p.Cursor != 32 || p.Head != 32 {
		t.Fatalf("read at the head = %s, %v; want an empty page at 32", js(p), err)
	}
	_, err = h.log.Read(h.ctx, "s", 33, changelog.Filter{}, 10)
	wantCode(t, "read above the head", err, problem.BadRequest)
	_, err = h.log.Read(h.ctx, "s", -1, changelog.Filter{}, 10)
	wantCode(t, "read below zero", err, problem.BadRequest)

	never := func(*store.Row) bool { return false }
	cases := []struct {
		name  string
		f     changelog.Filter
		empty bool
	}{
		{"types", changelog.Filter{Types: []string{"task"}}, false},
		{"two types", changelog.Filter{Types: []string{"task", "note"}}, false},
		{"ops", changelog.Filter{Ops: []string{"link", "delete"}}, false},
		{"actors", changelog.Filter{Actors: []string{"alice"}}, false},
		{"excludeTypes", changelog.Filter{ExcludeTypes: []string{"user"}}, false},
		{"excludeOps", changelog.Filter{ExcludeOps: []string{"put"}}, false},
		{"excludeActors", changelog.Filter{ExcludeActors: []string{"owner", "bob"}}, false},
		{"combined", changelog.Filter{Types: []string{"task", "note"}, Actors: []string{"alice", "bob"}, ExcludeOps: []string{"patch"}}, false},
		{"q in payload and id", changelog.Filter{Q: "NEEDLE"}, false},
		{"q in actor", changelog.Filter{Q: "Alice"}, false},
		{"entity", changelog.Filter{EntityType: "task", EntityID: "task-1"}, false},
		{"allow", changelog.Filter{Allow: func(r *store.Row) bool { return r.Seq%3 != 0 }}, false},
		{"types and allow", changelog.Filter{Types: []string{"note"}, Allow: func(r *store.Row) bool { return r.Actor != "bob" }}, false},
		{"no such type", changelog.Filter{Types: []string{"nope"}}, true},
		{"no such text", changelog.Filter{Q: "zzz-no-match"}, true},
		{"no such entity", changelog.Filter{EntityType: "task", EntityID: "absent"}, true},
		{"allow nothing", changelog.Filter{Allow: never}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var want []int64
			for _, r := range all {
				if refMatch(tc.f, r) {
					want = append(want, r.Seq)
				}
			}
			if tc.empty != (len(want) == 0) || len(want) == len(all) {
				t.Fatalf("suite bug: filter %s matches %d of %d rows", tc.name, len(want), len(all))
			}
			for _, limit := range []int{3, 100} {
				got := seqsOf(drainRead(t, h, tc.f, limit, maxScan))
				if !slices.Equal(got, want) {
					t.Fatalf("read with limit %d: seqs %v, want %v", limit, got, want)
				}
				got = seqsOf(drainHistory(t, h, tc.f, limit, maxScan, 0))
				slices.Reverse(want)
				if !slices.Equal(got, want) {
					t.Fatalf("history with limit %d: seqs %v, want %v", limit, got, want)
				}
				slices.Reverse(want)
			}
		})
	}
}

func seqsOf(rows []store.Row) []int64 {
	var s []int64
	for _, r := range rows {
		s = append(s, r.Seq)
	}
	return s
}

// drainRead reads forward from the horizon until the cursor reaches the
// head, checking every page. With bound > 0 a page's cursor moves by at
// most bound.
func drainRead(t *testing.T, h *harness, f changelog.Filter, limit, bound int) []store.Row {
	t.Helper()
	sp := h.spaceRow("s")
	var rows []store.Row
	from := sp.Horizon
	for pages := 0; from < sp.Head; pages++ {
		if pages > int(sp.Head)+1 {
			t.Fatalf("read: no progress at %d", from)
		}
		p, err := h.log.Read(h.ctx, "s", from, f, limit)
		if err != nil {
			t.Fatalf("read from %d: %v", from, err)
		}
		if p.Head != sp.Head || p.Cursor <= from || p.Cursor > sp.Head || len(p.Rows) > limit {
			t.Fatalf("read from %d limit %d: %d rows, cursor %d, head %d", from, limit, len(p.Rows), p.Cursor, p.Head)
		}
		if bound > 0 && p.Cursor-from > int64(bound) {
			t.Fatalf("read from %d: cursor %d moved past the scan bound %d", from, p.Cursor, bound)
		}
		prev := from
		for _, r := range p.Rows {
			if r.Seq <= prev || r.Seq > p.Cursor {
				t.Fatalf("read from %d: row %d out of order or past cursor %d", from, r.Seq, p.Cursor)
			}
			prev = r.Seq
		}
		rows = append(rows, p.Rows...)
		from = p.Cursor
	}
	return rows
}

// drainHistory walks backward from before (0 = the head) until the page
// says Exhausted, checking every page.
func drainHistory(t *testing.T, h *harness, f changelog.Filter, limit, bound int, before int64) []store.Row {
	t.Helper()
	sp := h.spaceRow("s")
	var rows []store.Row
	for pages := 0; ; pages++ {
		if pages > int(sp.Head)+2 {
			t.Fatalf("history: no progress at %d", before)
		}
		p, err := h.log.History(h.ctx, "s", before, f, limit)
		if err != nil {
			t.Fatalf("history before %d: %v", before, err)
		}
		upper := before
		if upper == 0 {
			upper = sp.Head + 1
		}
		if p.Head != sp.Head || len(p.Rows) > limit {
			t.Fatalf("history before %d limit %d: %d rows, head %d", before, limit, len(p.Rows), p.Head)
		}
		prev := upper
		for _, r := range p.Rows {
			if r.Seq >= prev || r.Seq <= sp.Horizon || (!p.Exhausted && r.Seq < p.Cursor) {
				t.Fatalf("history before %d: row %d out of order or below cursor %d", before, r.Seq, p.Cursor)
			}
			prev = r.Seq
		}
		rows = append(rows, p.Rows...)
		if p.Exhausted {
			return rows
		}
		if p.Cursor >= upper || p.Cursor <= sp.Horizon {
			t.Fatalf("history before %d: cursor %d without progress (horizon %d)", before, p.Cursor, sp.Horizon)
		}
		if bound > 0 && upper-p.Cursor > int64(bound) {
			t.Fatalf("history before %d: cursor %d moved past the scan bound %d", before, p.Cursor, bound)
		}
		before = p.Cursor
	}
}

// testRetention covers pruning: the horizon moves, numbering does not.
func testRetention(t *testing.T, open OpenFunc) {
	t.Parallel()
	h := newHarness(t, open, changelog.Options{})
	for i := 1; i <= 10; i++ {
		h.apply(put("task", fmt.Sprintf("t%d", i), `{"n":1}`), int64(i))
	}
	sp, err := h.log.Prune(h.ctx, "s", 5)
	if err != nil || sp.Head != 10 || sp.Horizon != 5 {
		t.Fatalf("prune(5) = %s, %v; want head 10 horizon 5", js(sp), err)
	}
	if sp := h.spaceRow("s"); sp.Head != 10 || sp.Horizon != 5 {
		t.Fatalf("space after prune = %s", js(sp))
	}
	h.apply(put("task", "t11", `{"n":1}`), 11)

	p, err := h.log.Pull(h.ctx, "s", 5, 100)
	if err != nil || len(p.Commits) != 6 || p.Commits[0].Seq != 6 || p.NextCursor != 11 || p.HasMore {
		t.Fatalf("pull at the horizon = %s, %v; want commits 6..11", js(p), err)
	}
	for _, after := range []int64{4, 0} {
		_, err = h.log.Pull(h.ctx, "s", after, 100)
		wantHistoryUnavailable(t, fmt.Sprintf("pull after %d", after), err, 5)
	}
	if got := seqsOf(drainRead(t, h, changelog.Filter{}, 100, 0)); !slices.Equal(got, []int64{6, 7, 8, 9, 10, 11}) {
		t.Fatalf("read from the horizon = %v", got)
	}
	_, err = h.log.Read(h.ctx, "s", 4, changelog.Filter{}, 10)
	wantHistoryUnavailable(t, "read from 4", err, 5)
	if got := seqsOf(drainHistory(t, h, changelog.Filter{}, 4, 0, 0)); !slices.Equal(got, []int64{11, 10, 9, 8, 7, 6}) {
		t.Fatalf("history down to the horizon = %v", got)
	}
	_, err = h.log.History(h.ctx, "s", 3, changelog.Filter{}, 10)
	wantHistoryUnavailable(t, "history before 3", err, 5)
	if rec := h.get("task", "t1"); rec.Version != 1 {
		t.Fatalf("record of a pruned commit = %s", js(rec))
	}

	_, err = h.log.Prune(h.ctx, "s", 12)
	wantCode(t, "prune past the head", err, problem.BadRequest)
	sp, err = h.log.Prune(h.ctx, "s", 11)
	if err != nil || sp.Head != 11 || sp.Horizon != 11 {
		t.Fatalf("prune everything = %s, %v; want head 11 horizon 11", js(sp), err)
	}
	p, err = h.log.Pull(h.ctx, "s", 11, 10)
	if err != nil || len(p.Commits) != 0 || p.NextCursor != 11 || p.HasMore {
		t.Fatalf("pull of a fully pruned space = %s, %v", js(p), err)
	}
	rp, err := h.log.Read(h.ctx, "s", 11, changelog.Filter{}, 10)
	if err != nil || len(rp.Rows) != 0 || rp.Cursor != 11 {
		t.Fatalf("read of a fully pruned space = %s, %v", js(rp), err)
	}
	if got := drainHistory(t, h, changelog.Filter{}, 10, 0, 0); len(got) != 0 {
		t.Fatalf("history of a fully pruned space = %s", js(got))
	}
	h.apply(put("task", "t12", `{"n":1}`), 12)
	p, err = h.log.Pull(h.ctx, "s", 11, 10)
	if err != nil || len(p.Commits) != 1 || p.Commits[0].Seq != 12 {
		t.Fatalf("pull after pruning everything = %s, %v", js(p), err)
	}
}

// testList covers as-of list pages: every page shows the collection as of
// the first page's head, whatever is written between pages.
func testList(t *testing.T, open OpenFunc) {
	t.Parallel()
	h := newHarness(t, open, changelog.Options{})
	asOf := map[string]store.Record{}
	seq := int64(0)
	w := func(m changelog.Mutation) *store.Record {
		t.Helper()
		h.clock.Advance(time.Second)
		seq++
		res := h.write(m)
		if res.Receipts[0].Seq != seq {
			t.Fatalf("%s: receipt %s, want seq %d", describe([]changelog.Mutation{m}), js(res.Receipts[0]), seq)
		}
		return res.Entities[0]
	}
	for _, id := range []string{"d", "a", "_x", "B", "c", "Z", "b"} {
		asOf[id] = *w(put("item", id, fmt.Sprintf(`{"v":"%s-0"}`, id)))
	}
	w(link("item", "c", "r", "user", "u1"))
	asOf["c"] = h.get("item", "c")
	w(put("other", "a", `{"v":1}`))
	w(put("item", "0dead", `{"v":1}`))
	w(del("item", "0dead"))
	const head = 11
	wantIDs := []string{"B", "Z", "_x", "a", "b", "c", "d"}

	page, err := h.log.List(h.ctx, changelog.ListParams{Space: "s", Type: "item", Limit: 2})
	if err != nil || page.Head != head || len(page.Items) > 2 {
		t.Fatalf("first page = %s, %v; want at most 2 items at head %d", js(page), err, head)
	}
	// Writes between pages: updates, deletes and creates on later pages.
	w(patch("item", "_x", `{"v":"_x-1"}`))
	w(del("item", "a"))
	w(put("item", "aa", `{"v":"aa-0"}`))
	w(patch("item", "c", `{"v":"c-1"}`))
	w(unlink("item", "c", "r", "user", "u1"))
	w(put("item", "e", `{"v":"e-0"}`))
	w(del("item", "d"))
	w(put("item", "d", `{"v":"d-1"}`))
	w(put("item", "0dead", `{"v":2}`))
	w(patch("item", "B", `{"v":"B-1"}`))
	w(put("item", "ab", `{"v":"ab-0"}`))
	w(del("item", "ab"))
	items := drainList(t, h, page, head, nil)
	wantItems(t, items, wantIDs, asOf)

	// Allow drops records the reader may not see; the snapshot holds.
	allow := func(r *store.Record) bool { return r.ID != "b" && r.ID != "Z" }
	first, err := h.log.List(h.ctx, changelog.ListParams{Space: "s", Type: "item", Limit: 2, Head: head, Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	wantItems(t, drainList(t, h, first, head, allow), []string{"B", "_x", "a", "c", "d"}, asOf)

	// Once the snapshot's head is pruned away, the next page is compacted.
	if _, err := h.log.Prune(h.ctx, "s", head+2); err != nil {
		t.Fatalf("prune: %v", err)
	}
	_, err = h.log.List(h.ctx, changelog.ListParams{Space: "s", Type: "item", After: "Z", Head: head, Limit: 2})
	wantHistoryUnavailable(t, "list page below the horizon", err, head+2)
}

// drainList follows Next from a first page, checking every page is taken
// at head.
func drainList(t *testing.T, h *harness, page changelog.ListPage, head int64, allow func(*store.Record) bool) []store.Record {
	t.Helper()
	items := page.Items
	for pages := 0; page.Next != ""; pages++ {
		if pages > 20 {
			t.Fatal("list: no progress")
		}
		var err error
		page, err = h.log.List(h.ctx, changelog.ListParams{Space: "s", Type: "item", After: page.Next, Head: head, Limit: 2, Allow: allow})
		if err != nil {
			t.Fatalf("list page: %v", err)
		}
		if page.Head != head || len(page.Items) > 2 {
			t.Fatalf("list page = %s, want at most 2 items at head %d", js(page), head)
		}
		items = append(items, page.Items...)
	}
	return items
}

// wantItems compares listed records with the records as of the snapshot.
func wantItems(t *testing.T, items []store.Record, ids []string, asOf map[string]store.Record) {
	t.Helper()
	var got []string
	for _, r := range items {
		got = append(got, r.ID)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("listed ids %q, want %q", got, ids)
	}
	for _, r := range items {
		want := asOf[r.ID]
		if r.Type != "item" || r.Version != want.Version || string(r.Properties) != string(want.Properties) ||
			!reflect.DeepEqual(r.Links, want.Links) && len(r.Links)+len(want.Links) > 0 ||
			!r.CreatedAt.Equal(want.CreatedAt) || !r.UpdatedAt.Equal(want.UpdatedAt) || r.Kind == store.KindDeleted {
			t.Fatalf("listed %s = %s, want as of the snapshot %s", r.ID, js(r), js(want))
		}
	}
}
