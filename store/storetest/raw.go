package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// testRaw covers store behaviour the Log cannot reach.
func testRaw(t *testing.T, open OpenFunc) {
	t.Run("Spaces", func(t *testing.T) { t.Parallel(); testRawSpaces(t, open) })
	t.Run("TypeDefs", func(t *testing.T) { t.Parallel(); testRawTypeDefs(t, open) })
	t.Run("Tokens", func(t *testing.T) { t.Parallel(); testRawTokens(t, open) })
	t.Run("Append", func(t *testing.T) { t.Parallel(); testRawAppend(t, open) })
	t.Run("Rollback", func(t *testing.T) { t.Parallel(); testRawRollback(t, open) })
	t.Run("Receipts", func(t *testing.T) { t.Parallel(); testRawReceipts(t, open) })
	t.Run("FirstChangesAfter", func(t *testing.T) { t.Parallel(); testFirstChangesAfter(t, open) })
	t.Run("EntityList", func(t *testing.T) { t.Parallel(); testRawEntityList(t, open) })
	t.Run("Rows", func(t *testing.T) { t.Parallel(); testRawRows(t, open) })
	t.Run("SpaceLock", func(t *testing.T) { t.Parallel(); testSpaceLock(t, open) })
	t.Run("Expect", func(t *testing.T) { t.Parallel(); testRawExpect(t, open) })
	t.Run("ExpectMany", func(t *testing.T) { t.Parallel(); testRawExpectMany(t, open) })
	t.Run("ExpectBatch", func(t *testing.T) { t.Parallel(); testRawExpectBatch(t, open) })
	t.Run("Definitions", func(t *testing.T) { t.Parallel(); testRawDefinitions(t, open) })
	t.Run("Secrets", func(t *testing.T) { t.Parallel(); testRawSecrets(t, open) })
	t.Run("Housekeeping", func(t *testing.T) { t.Parallel(); testHousekeeping(t, open) })
	t.Run("CommitLanded", func(t *testing.T) { t.Parallel(); testCommitLanded(t, open) })
	t.Run("AppendBatch", func(t *testing.T) { t.Parallel(); testAppendBatch(t, open) })
}

var ctx0 = context.Background()

// ts returns the suite's fake time plus n seconds, in UTC, microseconds.
func ts(n int) time.Time {
	return epoch0.UTC().Truncate(time.Microsecond).Add(time.Duration(n) * time.Second)
}

func testRawSpaces(t *testing.T, open OpenFunc) {
	st := open(t)
	for _, id := range []string{"b", "a", "c"} {
		sp, err := st.SpaceCreate(ctx0, id, "ep-"+id)
		if err != nil || sp.ID != id || sp.Head != 0 || sp.Horizon != 0 || sp.Epoch != "ep-"+id {
			t.Fatalf("space create %s = %s, %v", id, js(sp), err)
		}
	}
	if _, err := st.SpaceCreate(ctx0, "a", "x"); !errors.Is(err, store.ErrExists) {
		t.Fatalf("create existing space: err %v, want ErrExists", err)
	}
	if _, err := st.SpaceGet(ctx0, "zz"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get missing space: err %v, want ErrNotFound", err)
	}
	list, err := st.SpaceList(ctx0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("space list = %v, want [a b c]", ids)
	}
	sp, err := st.SpaceGet(ctx0, "a")
	if err != nil || sp.Epoch != "ep-a" || sp.CreatedAt.IsZero() {
		t.Fatalf("space get = %s, %v", js(sp), err)
	}
}

func testRawTypeDefs(t *testing.T, open OpenFunc) {
	st := open(t)
	if _, err := st.SpaceCreate(ctx0, "s", "e"); err != nil {
		t.Fatal(err)
	}
	sv := func() int64 {
		sp, err := st.SpaceGet(ctx0, "s")
		if err != nil {
			t.Fatal(err)
		}
		return sp.SchemaVersion
	}
	v0 := sv()
	for _, typ := range []string{"zeta", "alpha"} {
		td, err := st.TypeDefPut(ctx0, "s", store.TypeDef{Type: typ, Def: json.RawMessage(`{"strict":true}`), UpdatedAt: ts(0)})
		if err != nil || td.Type != typ {
			t.Fatalf("type def put %s = %s, %v", typ, js(td), err)
		}
	}
	if v := sv(); v != v0+2 {
		t.Fatalf("schema version %d after two puts, want %d", v, v0+2)
	}
	td, err := st.TypeDefGet(ctx0, "s", "zeta")
	if err != nil || td.Type != "zeta" {
		t.Fatalf("type def get = %s, %v", js(td), err)
	}
	wantJSON(t, "stored definition", td.Def, `{"strict":true}`)
	list, err := st.TypeDefList(ctx0, "s")
	if err != nil || len(list) != 2 || list[0].Type != "alpha" || list[1].Type != "zeta" {
		t.Fatalf("type def list = %s, %v", js(list), err)
	}
	if err := st.TypeDefDelete(ctx0, "s", "zeta"); err != nil {
		t.Fatal(err)
	}
	if v := sv(); v != v0+3 {
		t.Fatalf("schema version %d after a delete, want %d", v, v0+3)
	}
	if _, err := st.TypeDefGet(ctx0, "s", "zeta"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get deleted type def: err %v, want ErrNotFound", err)
	}
	if err := st.TypeDefDelete(ctx0, "s", "zeta"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete absent type def: err %v, want ErrNotFound", err)
	}
	if _, err := st.EntityGet(ctx0, "s", store.EntityKey{Type: "x", ID: "y"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get missing entity: err %v, want ErrNotFound", err)
	}
}

func testRawTokens(t *testing.T, open OpenFunc) {
	st := open(t)
	toks := []store.Token{
		{ID: "tok_b", Hash: []byte("hash-b-0123456789abcdef0123456789"), Space: "*", Role: "admin", Actor: "owner", CreatedAt: ts(0)},
		{ID: "tok_a", Hash: []byte("hash-a-0123456789abcdef0123456789"), Space: "s", Role: "reader", Actor: "token:tok_a",
			Types: []string{"note", "task"}, Scopes: []string{"log:read"}, User: "u1", Application: "app", CreatedAt: ts(1)},
	}
	for _, tok := range toks {
		if err := st.TokenCreate(ctx0, tok); err != nil {
			t.Fatalf("token create %s: %v", tok.ID, err)
		}
	}
	got, err := st.TokenByHash(ctx0, toks[1].Hash)
	if err != nil || !sameToken(got, toks[1]) {
		t.Fatalf("token by hash = %s, %v; want %s", js(got), err, js(toks[1]))
	}
	list, err := st.TokenList(ctx0)
	if err != nil || len(list) != 2 || !sameToken(list[0], toks[0]) || !sameToken(list[1], toks[1]) {
		t.Fatalf("token list = %s, %v; want in creation order", js(list), err)
	}
	gen0, err := st.TokenGeneration(ctx0)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.TokenDelete(ctx0, "tok_a"); err != nil {
		t.Fatal(err)
	}
	if err := st.TokenDelete(ctx0, "tok_a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete revoked token: err %v, want ErrNotFound", err)
	}
	// A revocation moves the generation once; a failed one does not.
	if gen, err := st.TokenGeneration(ctx0); err != nil || gen == gen0 {
		t.Fatalf("token generation after a revocation = %d, %v; want a change from %d", gen, err, gen0)
	}
	if _, err := st.TokenByHash(ctx0, toks[1].Hash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoked token by hash: err %v, want ErrNotFound", err)
	}
}

func sameToken(a, b store.Token) bool {
	return a.ID == b.ID && string(a.Hash) == string(b.Hash) && a.Space == b.Space && a.Role == b.Role &&
		a.Actor == b.Actor && slices.Equal(a.Types, b.Types) && slices.Equal(a.Scopes, b.Scopes) &&
		a.User == b.User && a.Application == b.Application && a.CreatedAt.Equal(b.CreatedAt)
}

// rawCommit builds a one-change commit of key at seq over before.
func rawCommit(seq int64, key store.EntityKey, props string, before *store.Record, mutationID string) (store.Commit, store.Record) {
	kind, created := store.ChangeUpdated, ts(int(seq))
	if before == nil {
		kind = store.ChangeCreated
	} else {
		created = before.CreatedAt
	}
	rec := store.Record{Type: key.Type, ID: key.ID, Version: seq, Kind: store.KindLive, Properties: json.RawMessage(props),
		Links:     []store.Link{{Rel: "r", Target: store.EntityKey{Type: "user", ID: "u1"}}},
		CreatedAt: created, UpdatedAt: ts(int(seq)), GroupVersions: map[string]int64{"a": seq, "sched": 1}}
	after := rec
	c := store.Commit{
		Row: store.Row{Seq: seq, TS: ts(int(seq)), Actor: "owner", Op: "put", EntityID: key.ID, Type: key.Type,
			Payload: json.RawMessage(`{"properties":["a"]}`)},
		Changes: []store.Change{{Ordinal: 0, Kind: kind, Type: key.Type, ID: key.ID, Version: seq, Before: before, After: &after,
			ConflictGroups: []string{"a"}}},
		Receipt: store.Receipt{MutationID: mutationID, Status: store.ReceiptApplied, Seq: seq, Version: seq,
			Accepted: []string{"a"}, Rejected: []store.RejectedProperty{}, Proposed: json.RawMessage(`{"a":1}`)},
		Provenance: store.Provenance{Actor: "owner", Via: "trigger", RequestID: "rq", MutationID: mutationID, Trigger: "tr",
			Delivery: "dl", CausedBy: seq - 1, Depth: 2, Traceparent: "00-aa-bb-01"},
	}
	return c, rec
}

// appendOne writes one commit in its own transaction.
func appendOne(t *testing.T, st store.Store, space string, c store.Commit, recs ...store.Record) {
	t.Helper()
	tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: space})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx0) }()
	if tx.Space().Head != c.Seq-1 {
		t.Fatalf("locked head %d, want %d", tx.Space().Head, c.Seq-1)
	}
	if err := tx.Append(ctx0, c, recs); err != nil {
		t.Fatalf("append %d: %v", c.Seq, err)
	}
	if err := tx.Commit(ctx0); err != nil {
		t.Fatalf("commit %d: %v", c.Seq, err)
	}
}

func testRawAppend(t *testing.T, open OpenFunc) {
	st := open(t)
	if _, err := st.SpaceCreate(ctx0, "s", "e"); err != nil {
		t.Fatal(err)
	}
	key := store.EntityKey{Type: "task", ID: "t1"}
	c1, r1 := rawCommit(1, key, `{"a":1,"b":{"c":2}}`, nil, "m1")
	appendOne(t, st, "s", c1, r1)
	c2, r2 := rawCommit(2, key, `{"a":2}`, &r1, "")
	appendOne(t, st, "s", c2, r2)

	sp, err := st.SpaceGet(ctx0, "s")
	if err != nil || sp.Head != 2 || sp.Horizon != 0 {
		t.Fatalf("space = %s, %v; want head 2", js(sp), err)
	}
	got, err := st.EntityGet(ctx0, "s", key)
	if err != nil {
		t.Fatal(err)
	}
	wantSameRecord(t, "stored record", &got, &r2)
	commits, err := st.Commits(ctx0, store.CommitsParams{Space: "s", After: 0, Limit: 10})
	if err != nil || len(commits) != 2 {
		t.Fatalf("commits = %s, %v", js(commits), err)
	}
	for i, want := range []store.Commit{c1, c2} {
		wantSameCommit(t, commits[i], want)
	}
	if commits, err := st.Commits(ctx0, store.CommitsParams{Space: "s", After: 1, Limit: 1}); err != nil || len(commits) != 1 || commits[0].Seq != 2 {
		t.Fatalf("commits after 1 = %s, %v", js(commits), err)
	}
	rows, err := st.Rows(ctx0, store.RowsParams{Space: "s", Lo: 0, Hi: 2, Limit: 10})
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows = %s, %v", js(rows), err)
	}
	wantSameRow(t, rows[0], c1.Row)
	wantSameRow(t, rows[1], c2.Row)
	if !rows[0].TS.Equal(ts(1)) || rows[0].TS.Location() != time.UTC {
		t.Fatalf("row ts %s, want %s in UTC", rows[0].TS, ts(1))
	}
}

// wantSameCommit compares a stored commit with the one appended.
func wantSameCommit(t *testing.T, got, want store.Commit) {
	t.Helper()
	wantSameRow(t, got.Row, want.Row)
	if got.Provenance != want.Provenance {
		t.Fatalf("commit %d provenance %s, want %s", want.Seq, js(got.Provenance), js(want.Provenance))
	}
	if !reflect.DeepEqual(normReceipt(t, got.Receipt), normReceipt(t, want.Receipt)) {
		t.Fatalf("commit %d receipt %s, want %s", want.Seq, js(got.Receipt), js(want.Receipt))
	}
	if len(got.Changes) != len(want.Changes) {
		t.Fatalf("commit %d has %d changes, want %d", want.Seq, len(got.Changes), len(want.Changes))
	}
	for i, w := range want.Changes {
		g := got.Changes[i]
		if g.Ordinal != w.Ordinal || g.Kind != w.Kind || g.Type != w.Type || g.ID != w.ID || g.Version != w.Version ||
			!slices.Equal(g.ConflictGroups, w.ConflictGroups) {
			t.Fatalf("commit %d change %d = %s, want %s", want.Seq, i, js(g), js(w))
		}
		wantSameRecord(t, "before", g.Before, w.Before)
		wantSameRecord(t, "after", g.After, w.After)
	}
}

// wantSameRecord compares records field by field (snapshots need not keep
// GroupVersions; a stored record must).
func wantSameRecord(t *testing.T, what string, got, want *store.Record) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("%s = %s, want %s", what, js(got), js(want))
	}
	if got == nil {
		return
	}
	if got.Type != want.Type || got.ID != want.ID || got.Version != want.Version ||
		string(got.Properties) != string(want.Properties) || !reflect.DeepEqual(got.Links, want.Links) ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("%s = %s, want %s", what, js(got), js(want))
	}
	if what == "stored record" && (got.Kind != want.Kind || !reflect.DeepEqual(got.GroupVersions, want.GroupVersions)) {
		t.Fatalf("%s: kind %q group versions %v, want %q %v", what, got.Kind, got.GroupVersions, want.Kind, want.GroupVersions)
	}
}

func testRawRollback(t *testing.T, open OpenFunc) {
	st := open(t)
	if _, err := st.SpaceCreate(ctx0, "s", "e"); err != nil {
		t.Fatal(err)
	}
	key := store.EntityKey{Type: "task", ID: "t1"}
	c1, r1 := rawCommit(1, key, `{"a":1}`, nil, "m1")
	tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: "s", Entities: []store.EntityKey{key}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Append(ctx0, c1, []store.Record{r1}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx0); err != nil {
		t.Fatal(err)
	}
	sp, err := st.SpaceGet(ctx0, "s")
	if err != nil || sp.Head != 0 {
		t.Fatalf("space after rollback = %s, %v", js(sp), err)
	}
	if _, err := st.EntityGet(ctx0, "s", key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("entity after rollback: err %v, want ErrNotFound", err)
	}
	if rows, err := st.Rows(ctx0, store.RowsParams{Space: "s", Lo: 0, Hi: 10, Limit: 10}); err != nil || len(rows) != 0 {
		t.Fatalf("rows after rollback = %s, %v", js(rows), err)
	}
	// The rolled-back seq is free: the next transaction appends it.
	tx, err = st.WriteBegin(ctx0, store.WriteBeginParams{Space: "s", MutationIDs: []string{"m1"}})
	if err != nil {
		t.Fatal(err)
	}
	if tx.Space().Head != 0 || len(tx.Receipts()) != 0 {
		t.Fatalf("after rollback: head %d receipts %s", tx.Space().Head, js(tx.Receipts()))
	}
	if err := tx.Append(ctx0, c1, []store.Record{r1}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx0); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx0); err != nil {
		t.Fatalf("rollback after commit: %v", err)
	}
	if sp, _ := st.SpaceGet(ctx0, "s"); sp.Head != 1 {
		t.Fatalf("head %d after commit, want 1", sp.Head)
	}
	if _, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: "missing"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("write begin on a missing space: err %v, want ErrNotFound", err)
	}
}

func testRawReceipts(t *testing.T, open OpenFunc) {
	st := open(t)
	if _, err := st.SpaceCreate(ctx0, "s", "e"); err != nil {
		t.Fatal(err)
	}
	key := store.EntityKey{Type: "task", ID: "t1"}
	c1, r1 := rawCommit(1, key, `{"a":1}`, nil, "m1")
	appendOne(t, st, "s", c1, r1)
	noop := store.StoredReceipt{MutationID: "m-noop", Receipt: store.Receipt{MutationID: "m-noop", Status: store.ReceiptNoop, Version: 1},
		Entity: &r1, CreatedAt: ts(5)}
	rej := store.StoredReceipt{MutationID: "m-rej", Receipt: store.Receipt{MutationID: "m-rej", Status: store.ReceiptRejected,
		Reason: &store.Reason{Code: "conflict", Message: "version mismatch"}}, CreatedAt: ts(6)}
	tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []store.StoredReceipt{noop, rej} {
		if err := tx.ReceiptPut(ctx0, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx0); err != nil {
		t.Fatal(err)
	}
	if sp, _ := st.SpaceGet(ctx0, "s"); sp.Head != 1 {
		t.Fatalf("receipts moved the head to %d", sp.Head)
	}
	load := func(since time.Time, ids ...string) map[string]store.StoredReceipt {
		t.Helper()
		tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: "s", MutationIDs: ids, ReceiptsSince: since, Entities: []store.EntityKey{key}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx0) }()
		if e, ok := tx.Entities()[key]; !ok || e.Version != tx.Space().Head {
			t.Fatalf("loaded %s at version %d, want the head %d", key.ID, e.Version, tx.Space().Head)
		}
		return tx.Receipts()
	}
	got := load(ts(0), "m1", "m-noop", "m-rej", "m-absent")
	if len(got) != 3 {
		t.Fatalf("loaded receipts = %s, want m1, m-noop, m-rej", js(got))
	}
	applied := got["m1"]
	if !reflect.DeepEqual(normReceipt(t, applied.Receipt), normReceipt(t, c1.Receipt)) || !applied.CreatedAt.Equal(ts(1)) {
		t.Fatalf("stored applied receipt = %s, want %s at %s", js(applied), js(c1.Receipt), ts(1))
	}
	wantSameRecord(t, "receipt entity", applied.Entity, &r1)
	wantSameRecord(t, "no-op receipt entity", got["m-noop"].Entity, &r1)
	if got["m-rej"].Entity != nil || !reflect.DeepEqual(normReceipt(t, got["m-rej"].Receipt), normReceipt(t, rej.Receipt)) || !got["m-rej"].CreatedAt.Equal(ts(6)) {
		t.Fatalf("stored rejected receipt = %s, want %s", js(got["m-rej"]), js(rej))
	}
	if got := load(ts(2), "m1", "m-noop", "m-rej"); len(got) != 2 || got["m1"].MutationID != "" {
		t.Fatalf("receipts since %s = %s, want m-noop and m-rej", ts(2), js(got))
	}
	// A commit reusing an expired id replaces its receipt.
	c2, r2 := rawCommit(2, key, `{"a":2}`, &r1, "m1")
	c2.TS = ts(100)
	appendOne(t, st, "s", c2, r2)
	if got := load(ts(50), "m1"); got["m1"].Receipt.Seq != 2 {
		t.Fatalf("renewed receipt = %s, want seq 2", js(got))
	}
}

func testFirstChangesAfter(t *testing.T, open OpenFunc) {
	h := newHarness(t, open, changelog.Options{})
	h.apply(put("task", "t1", `{"v":1}`), 1)
	h.apply(put("task", "t1", `{"v":2}`), 2)
	h.apply(put("task", "t2", `{"v":1}`), 3)
	h.apply(put("task", "t1", `{"v":3}`), 4)
	h.apply(merge("task", "t1", "t2"), 5)
	k1, k2, k3 := store.EntityKey{Type: "task", ID: "t1"}, store.EntityKey{Type: "task", ID: "t2"}, store.EntityKey{Type: "task", ID: "t3"}
	for _, tc := range []struct {
		after int64
		want  map[store.EntityKey][2]int64 // key -> {version of the change, version of its before (0 = none)}
	}{
		{0, map[store.EntityKey][2]int64{k1: {1, 0}, k2: {3, 0}}},
		{1, map[store.EntityKey][2]int64{k1: {2, 1}, k2: {3, 0}}},
		{3, map[store.EntityKey][2]int64{k1: {4, 2}, k2: {5, 3}}},
		{4, map[store.EntityKey][2]int64{k1: {5, 4}, k2: {5, 3}}},
		{5, map[store.EntityKey][2]int64{}},
	} {
		got, err := h.st.FirstChangesAfter(h.ctx, "s", tc.after, []store.EntityKey{k1, k2, k3})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("first changes after %d = %s, want %v", tc.after, js(got), tc.want)
		}
		for k, w := range tc.want {
			ch, ok := got[k]
			bv := int64(0)
			if ch.Before != nil {
				bv = ch.Before.Version
			}
			if !ok || ch.Version != w[0] || bv != w[1] || ch.ID != k.ID {
				t.Fatalf("first change of %s after %d = %s, want version %d over before %d", k.ID, tc.after, js(ch), w[0], w[1])
			}
		}
	}
}

func testRawEntityList(t *testing.T, open OpenFunc) {
	h := newHarness(t, open, changelog.Options{})
	h.apply(put("item", "b", `{"v":1}`), 1)
	h.apply(put("item", "a", `{"v":1}`), 2)
	h.apply(put("item", "c", `{"v":1}`), 3)
	h.apply(put("item", "B", `{"v":1}`), 4)
	h.apply(put("other", "a0", `{"v":1}`), 5)
	h.apply(del("item", "c"), 6)
	h.apply(del("item", "a"), 7)
	ids := func(p store.EntityListParams) []string {
		t.Helper()
		p.Space, p.Type = "s", "item"
		recs, err := h.st.EntityList(h.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, tc := range []struct {
		p    store.EntityListParams
		want []string
	}{
		{store.EntityListParams{Limit: 10}, []string{"B", "b"}},
		{store.EntityListParams{Limit: 1}, []string{"B"}},
		{store.EntityListParams{After: "B", Limit: 10}, []string{"b"}},
		{store.EntityListParams{AsOf: 6, Limit: 10}, []string{"B", "a", "b"}},
		{store.EntityListParams{AsOf: 5, Limit: 10}, []string{"B", "a", "b", "c"}},
		{store.EntityListParams{AsOf: 5, After: "a", Limit: 2}, []string{"b", "c"}},
	} {
		if got := ids(tc.p); !slices.Equal(got, tc.want) {
			t.Fatalf("entity list %+v = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func testRawRows(t *testing.T, open OpenFunc) {
	h := newHarness(t, open, changelog.Options{})
	writeRows(t, h)
	all, err := h.st.Rows(h.ctx, store.RowsParams{Space: "s", Lo: 0, Hi: 32, Limit: 100})
	if err != nil || len(all) != 32 {
		t.Fatalf("rows = %d, %v", len(all), err)
	}
	for _, tc := range []struct {
		name string
		p    store.RowsParams
		f    changelog.Filter
	}{
		{"window", store.RowsParams{Lo: 5, Hi: 9, Limit: 100}, changelog.Filter{}},
		{"limit", store.RowsParams{Lo: 0, Hi: 32, Limit: 4}, changelog.Filter{}},
		{"desc", store.RowsParams{Lo: 10, Hi: 20, Desc: true, Limit: 4}, changelog.Filter{}},
		{"types", store.RowsParams{Lo: 0, Hi: 32, Limit: 100}, changelog.Filter{Types: []string{"task", "note"}}},
		{"ops", store.RowsParams{Lo: 0, Hi: 32, Limit: 100}, changelog.Filter{Ops: []string{"delete"}}},
		{"actors", store.RowsParams{Lo: 0, Hi: 32, Desc: true, Limit: 5}, changelog.Filter{Actors: []string{"bob"}}},
		{"excludes", store.RowsParams{Lo: 0, Hi: 32, Limit: 100},
			changelog.Filter{ExcludeTypes: []string{"user"}, ExcludeOps: []string{"put"}, ExcludeActors: []string{"alice"}}},
		{"entity", store.RowsParams{Lo: 0, Hi: 32, Limit: 100}, changelog.Filter{EntityType: "note", EntityID: "note-2"}},
	} {
		p := tc.p
		p.Space = "s"
		p.Filter = store.RowFilter{Types: tc.f.Types, Ops: tc.f.Ops, Actors: tc.f.Actors, ExcludeTypes: tc.f.ExcludeTypes,
			ExcludeOps: tc.f.ExcludeOps, ExcludeActors: tc.f.ExcludeActors, EntityType: tc.f.EntityType, EntityID: tc.f.EntityID}
		var want []int64
		for _, r := range all {
			if r.Seq > p.Lo && r.Seq <= p.Hi && refMatch(tc.f, r) {
				want = append(want, r.Seq)
			}
		}
		if p.Desc {
			slices.Reverse(want)
		}
		if len(want) > p.Limit {
			want = want[:p.Limit]
		}
		rows, err := h.st.Rows(h.ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := seqsOf(rows); !slices.Equal(got, want) || len(want) == 0 {
			t.Fatalf("%s: rows %v, want %v", tc.name, got, want)
		}
	}
}

// testSpaceLock checks that a second write transaction on a space waits
// for the first: it sees the head the first committed.
func testSpaceLock(t *testing.T, open OpenFunc) {
	st := open(t)
	if _, err := st.SpaceCreate(ctx0, "s", "e"); err != nil {
		t.Fatal(err)
	}
	tx1, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	type began struct {
		tx  store.WriteTx
		err error
	}
	second := make(chan began, 1)
	go func() {
		tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: "s"})
		second <- began{tx, err}
	}()
	// The second writer must still be waiting for the lock.
	select {
	case b := <-second:
		if b.tx != nil {
			_ = b.tx.Rollback(ctx0)
		}
		_ = tx1.Rollback(ctx0)
		t.Fatalf("second write transaction began while the first held the lock (err %v)", b.err)
	case <-time.After(100 * time.Millisecond):
	}
	c1, r1 := rawCommit(1, store.EntityKey{Type: "task", ID: "t1"}, `{"a":1}`, nil, "")
	if err := tx1.Append(ctx0, c1, []store.Record{r1}); err != nil {
		t.Fatal(err)
	}
	if err := tx1.Commit(ctx0); err != nil {
		t.Fatal(err)
	}
	b := <-second
	if b.err != nil {
		t.Fatalf("second write begin: %v", b.err)
	}
	defer func() { _ = b.tx.Rollback(ctx0) }()
	if b.tx.Space().Head != 1 {
		t.Fatalf("second transaction locked head %d, want 1 (the first's commit)", b.tx.Space().Head)
	}
	if _, ok := b.tx.Entities()[r1.Key()]; ok {
		t.Fatal("entities loaded without being named")
	}
}
