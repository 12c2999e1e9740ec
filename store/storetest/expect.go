package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// testRawExpect checks the optimistic write contract: a driver either
// verifies an Expectation under the lock (a wrong one fails Commit with
// ErrStale and writes nothing) or ignores it and answers with the real
// state. A right one always commits.
func testRawExpect(t *testing.T, open OpenFunc) {
	st := open(t)
	if _, err := st.SpaceCreate(ctx0, "s", "e"); err != nil {
		t.Fatal(err)
	}
	key := store.EntityKey{Type: "task", ID: "t1"}
	c1, r1 := rawCommit(1, key, `{"a":1}`, nil, "")
	appendOne(t, st, "s", c1, r1)

	wrong := []struct {
		name string
		exp  store.Expectation
	}{
		{"head", store.Expectation{Head: 0, Records: map[store.EntityKey]store.Record{key: r1}}},
		{"entity predicted absent", store.Expectation{Head: 1}},
		{"entity version", store.Expectation{Head: 1, Records: map[store.EntityKey]store.Record{key: withVersion(r1, 7)}}},
		{"schema version", store.Expectation{Head: 1, SchemaVersion: 9, Records: map[store.EntityKey]store.Record{key: r1}}},
	}
	for _, tc := range wrong {
		t.Run(tc.name, func(t *testing.T) { expectStaleOrReal(t, st, key, r1, tc.exp) })
	}
	t.Run("right", func(t *testing.T) {
		exp := store.Expectation{Head: 1, Records: map[store.EntityKey]store.Record{key: r1}}
		c2, r2 := rawCommit(2, key, `{"a":2}`, &r1, "")
		commitExpected(t, st, store.WriteBeginParams{Space: "s", Entities: []store.EntityKey{key}, Expect: &exp}, c2, r2)
	})
}

// commitExpected appends c (writing r) in a transaction opened with p,
// whose expectation is right: the commit must land and move space s's
// head to c's seq.
func commitExpected(t *testing.T, st store.Store, p store.WriteBeginParams, c store.Commit, r store.Record) {
	t.Helper()
	tx, err := st.WriteBegin(ctx0, p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx0) }()
	if err := tx.Append(ctx0, c, []store.Record{r}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx0); err != nil {
		t.Fatalf("commit with a right expectation: %v", err)
	}
	if sp, _ := st.SpaceGet(ctx0, "s"); sp.Head != c.Seq {
		t.Fatalf("head = %d, want %d", sp.Head, c.Seq)
	}
}

func withVersion(r store.Record, v int64) store.Record {
	r.Version = v
	return r
}

// expectStaleOrReal opens a transaction with a wrong expectation. A driver
// that trusts it must refuse the commit with ErrStale and leave the space
// untouched; a driver that ignores it must report the real state.
func expectStaleOrReal(t *testing.T, st store.Store, key store.EntityKey, real store.Record, exp store.Expectation) {
	t.Helper()
	tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: "s", Entities: []store.EntityKey{key}, Expect: &exp})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx0) }()
	if got := tx.Space().Head; got == 1 && tx.Space().SchemaVersion == 0 && tx.Entities()[key].Version == 1 {
		// The driver ignored the prediction and read the truth: fine.
		return
	}
	next := tx.Space().Head + 1
	c, r := rawCommit(next, key, `{"a":99}`, nil, "")
	if err := tx.Append(ctx0, c, []store.Record{r}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx0); !errors.Is(err, store.ErrStale) {
		t.Fatalf("commit with a wrong expectation: err = %v, want ErrStale", err)
	}
	sp, err := st.SpaceGet(ctx0, "s")
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.EntityGet(ctx0, "s", key)
	if err != nil {
		t.Fatal(err)
	}
	if sp.Head != 1 || got.Version != 1 {
		t.Fatalf("after a stale commit: head %d, entity version %d; want 1 and 1", sp.Head, got.Version)
	}
}

// testRawExpectMany is testRawExpect for a group's prediction of several
// entities and mutation ids, which a driver may check all at once: one
// wrong prediction among right ones fails the commit, whichever it is.
func testRawExpectMany(t *testing.T, open OpenFunc) {
	st := open(t)
	if _, err := st.SpaceCreate(ctx0, "s", "e"); err != nil {
		t.Fatal(err)
	}
	t1, t2, t3 := store.EntityKey{Type: "task", ID: "t1"}, store.EntityKey{Type: "task", ID: "t2"}, store.EntityKey{Type: "note", ID: "t1"}
	c1, r1 := rawCommit(1, t1, `{"a":1}`, nil, "m1")
	appendOne(t, st, "s", c1, r1)
	deleted := r1
	deleted.Kind = store.KindDeleted
	p := func(records map[store.EntityKey]store.Record, ids ...string) store.WriteBeginParams {
		return store.WriteBeginParams{Space: "s", Entities: []store.EntityKey{t3, t1, t2}, MutationIDs: ids,
			Expect: &store.Expectation{Head: 1, Records: records}}
	}
	right := map[store.EntityKey]store.Record{t1: r1}
	wrong := []struct {
		name string
		p    store.WriteBeginParams
	}{
		{"entity predicted absent", p(nil, "m2", "m3")},
		{"entity version", p(map[store.EntityKey]store.Record{t1: withVersion(r1, 7)}, "m2", "m3")},
		{"entity kind", p(map[store.EntityKey]store.Record{t1: deleted}, "m2", "m3")},
		{"entity predicted present", p(map[store.EntityKey]store.Record{t1: r1, t2: r1}, "m2", "m3")},
		{"receipt predicted absent", p(right, "m2", "m1", "m3")},
	}
	for _, tc := range wrong {
		t.Run(tc.name, func(t *testing.T) { expectManyStaleOrReal(t, st, tc.p, r1) })
	}
	t.Run("no prediction", func(t *testing.T) {
		params := p(nil, "m2", "m1", "m3")
		params.Expect = nil
		tx, err := st.WriteBegin(ctx0, params)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx0) }()
		if !readTruth(tx, params, r1, t2) || len(tx.Entities()) != 1 || len(tx.Receipts()) != 1 {
			t.Fatalf("read head %d, entities %v, receipts %v; want head 1, only task t1 at version 1 and only m1",
				tx.Space().Head, tx.Entities(), tx.Receipts())
		}
	})
	t.Run("right", func(t *testing.T) {
		c2, r2 := rawCommit(2, t2, `{"a":2}`, nil, "")
		commitExpected(t, st, p(right, "m2", "m3"), c2, r2)
	})
}

// expectManyStaleOrReal is expectStaleOrReal for params naming several
// entities: real is t1's record at head 1, and the commit tried creates
// task t2, which must not exist afterwards.
func expectManyStaleOrReal(t *testing.T, st store.Store, p store.WriteBeginParams, real store.Record) {
	t.Helper()
	tx, err := st.WriteBegin(ctx0, p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx0) }()
	t2 := store.EntityKey{Type: "task", ID: "t2"}
	if readTruth(tx, p, real, t2) {
		return // the driver ignored the prediction: fine
	}
	c, r := rawCommit(tx.Space().Head+1, t2, `{"a":99}`, nil, "")
	if err := tx.Append(ctx0, c, []store.Record{r}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx0); !errors.Is(err, store.ErrStale) {
		t.Fatalf("commit with a wrong expectation: err = %v, want ErrStale", err)
	}
	if sp, err := st.SpaceGet(ctx0, "s"); err != nil || sp.Head != 1 {
		t.Fatalf("after a stale commit: head %d, %v; want 1", sp.Head, err)
	}
	if _, err := st.EntityGet(ctx0, "s", t2); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after a stale commit: task t2 read with err %v, want ErrNotFound", err)
	}
}

// readTruth reports whether tx answered p's reads with the truth of
// expectManyStaleOrReal's space rather than p's prediction: head 1, t1 as
// real, t2 missing and m1's receipt found if asked for.
func readTruth(tx store.WriteTx, p store.WriteBeginParams, real store.Record, t2 store.EntityKey) bool {
	got, ok := tx.Entities()[real.Key()]
	if tx.Space().Head != 1 || !ok || got.Version != real.Version || got.Kind != real.Kind {
		return false
	}
	if _, ok := tx.Entities()[t2]; ok {
		return false
	}
	_, found := tx.Receipts()["m1"]
	return found == slices.Contains(p.MutationIDs, "m1")
}

// testTwoLogs writes one entity alternately through two Logs over one
// store, as two processes sharing a database would: each Log's prediction
// of the other's writes goes stale, and every write must still apply on
// the true state with gapless seqs.
func testTwoLogs(t *testing.T, open OpenFunc) {
	st := open(t)
	a, b := changelog.New(st, changelog.Options{}), changelog.New(st, changelog.Options{})
	if _, err := a.CreateSpace(ctx0, "s"); err != nil {
		t.Fatal(err)
	}
	logs := []*changelog.Log{a, b}
	for i := 1; i <= 6; i++ {
		lg := logs[i%2]
		m := changelog.Mutation{Op: changelog.OpPatch, Type: "task", EntityID: "t1", Patch: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		if i == 1 {
			m = changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: "t1", Properties: json.RawMessage(`{"n":1}`)}
		}
		res, err := lg.Write(ctx0, changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}, Provenance: store.Provenance{Actor: "owner", Via: "api"}})
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if r := res.Receipts[0]; r.Status != store.ReceiptApplied || r.Seq != int64(i) {
			t.Fatalf("write %d: receipt %+v, want applied at seq %d", i, r, i)
		}
		// A put of an entity the other Log created is predicted absent
		// by a Log that never saw it: it must still be an update.
		put := changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: "t1", Properties: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		res, err = logs[(i+1)%2].Write(ctx0, changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{put}, Provenance: store.Provenance{Actor: "owner", Via: "api"}})
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		if res.Receipts[0].Status != store.ReceiptNoop || res.Created[0] {
			t.Fatalf("put %d through the other log: receipt %+v created %v, want a no-op", i, res.Receipts[0], res.Created[0])
		}
	}
	rec, err := b.Get(ctx0, "s", store.EntityKey{Type: "task", ID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.Properties) != `{"n":6}` || rec.Version != 6 {
		t.Fatalf("entity = %s at version %d, want {\"n\":6} at 6", rec.Properties, rec.Version)
	}
}

// testRawExpectBatch is testRawExpect for a group appended at once
// (store.BatchAppender): new entities predicted absent commit, and one
// predicted absent that exists fails the whole batch with ErrStale,
// wherever it stands in the batch, having written nothing.
func testRawExpectBatch(t *testing.T, open OpenFunc) {
	st := open(t)
	if _, err := st.SpaceCreate(ctx0, "s", "e"); err != nil {
		t.Fatal(err)
	}
	old := store.EntityKey{Type: "task", ID: "old"}
	c1, r1 := rawCommit(1, old, `{"a":1}`, nil, "")
	appendOne(t, st, "s", c1, r1)
	batch := func(keys ...store.EntityKey) ([]store.Commit, [][]store.Record) {
		var cs []store.Commit
		var rs [][]store.Record
		for i, k := range keys {
			c, r := rawCommit(int64(2+i), k, fmt.Sprintf(`{"a":%d}`, 2+i), nil, "")
			cs, rs = append(cs, c), append(rs, []store.Record{r})
		}
		return cs, rs
	}
	run := func(keys ...store.EntityKey) error {
		tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: "s", Entities: keys, Expect: &store.Expectation{Head: 1}})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx0) }()
		if _, ok := tx.Entities()[old]; ok {
			return nil // the driver read the truth: nothing to check here
		}
		cs, rs := batch(keys...)
		if ba, ok := tx.(store.BatchAppender); ok {
			err = ba.AppendBatch(ctx0, cs, rs)
		} else {
			for i := range cs {
				if err = tx.Append(ctx0, cs[i], rs[i]); err != nil {
					break
				}
			}
		}
		if err != nil {
			t.Fatalf("append: %v", err)
		}
		return tx.Commit(ctx0)
	}
	n := func(i int) store.EntityKey { return store.EntityKey{Type: "task", ID: fmt.Sprintf("n%d", i)} }
	for _, keys := range [][]store.EntityKey{{old, n(1), n(2)}, {n(1), n(2), old}, {n(1), old}} {
		if err := run(keys...); err != nil && !errors.Is(err, store.ErrStale) {
			t.Fatalf("batch %v: %v, want ErrStale or a driver that read the truth", keys, err)
		}
		if sp, err := st.SpaceGet(ctx0, "s"); err != nil || sp.Head != 1 {
			t.Fatalf("after batch %v: head %d, %v; want 1", keys, sp.Head, err)
		}
		if _, err := st.EntityGet(ctx0, "s", n(1)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("after batch %v: n1 read with %v, want ErrNotFound", keys, err)
		}
	}
	if err := run(n(1), n(2), n(3)); err != nil {
		t.Fatalf("a right prediction of new entities: %v", err)
	}
	for i := 1; i <= 3; i++ {
		if got, err := st.EntityGet(ctx0, "s", n(i)); err != nil || got.Version != int64(1+i) {
			t.Fatalf("n%d: version %d, %v; want %d", i, got.Version, err, 1+i)
		}
	}
}

// testTwoLogsPrecondition puts, with ifVersion, an entity another Log
// created: the writing Log predicts it absent, and a driver that trusts
// the prediction must not let it reject the put (a rejected put writes
// no row, so nothing else would catch the wrong prediction).
func testTwoLogsPrecondition(t *testing.T, open OpenFunc) {
	st := open(t)
	a, b := changelog.New(st, changelog.Options{}), changelog.New(st, changelog.Options{})
	if _, err := a.CreateSpace(ctx0, "s"); err != nil {
		t.Fatal(err)
	}
	put := func(lg *changelog.Log, id string, n int, ifVersion *int64) store.Receipt {
		t.Helper()
		m := changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: id, Properties: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)), IfVersion: ifVersion}
		res, err := lg.Write(ctx0, changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}, Provenance: store.Provenance{Actor: "owner", Via: "api"}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Receipts[0]
	}
	put(a, "t1", 1, nil)
	put(b, "warm", 1, nil) // b's write cache now holds the space, not t1
	v := int64(1)
	if r := put(b, "t1", 2, &v); r.Status != store.ReceiptApplied || r.Version != 3 {
		t.Fatalf("put with ifVersion 1 of an entity at version 1: receipt %+v, want applied at version 3", r)
	}
	if r := put(b, "t1", 3, &v); r.Status != store.ReceiptRejected {
		t.Fatalf("put with ifVersion 1 of an entity at version 3: receipt %+v, want rejected", r)
	}
	if r := put(a, "t1", 4, &v); r.Status != store.ReceiptRejected {
		t.Fatalf("put through the first Log with ifVersion 1 of an entity at version 3: receipt %+v, want rejected", r)
	}
}
