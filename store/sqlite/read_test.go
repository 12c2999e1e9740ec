package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// fixture writes six commits to space "s":
//
//	1 create task/a alice (m1)   4 update task/a bob (m4)
//	2 create task/b bob          5 delete task/b engine
//	3 create note/x alice        6 update note/x alice
func fixture(t *testing.T, s *Store) map[string]store.Record {
	t.Helper()
	newSpace(t, s, "s")
	a1 := live("task", "a", 1, `{"title":"a"}`)
	b2 := live("task", "b", 2, `{"title":"b"}`)
	x3 := live("note", "x", 3, `{"text":"x"}`)
	a4 := live("task", "a", 4, `{"title":"a2"}`)
	x6 := live("note", "x", 6, `{"text":"x2"}`)
	snap := func(r store.Record) *store.Record { r.Kind, r.GroupVersions = "", nil; return &r }
	steps := []func() (store.Commit, []store.Record){
		func() (store.Commit, []store.Record) { return upsertCommit(1, nil, a1, "alice", "m1") },
		func() (store.Commit, []store.Record) { return upsertCommit(2, nil, b2, "bob", "") },
		func() (store.Commit, []store.Record) { return upsertCommit(3, nil, x3, "alice", "") },
		func() (store.Commit, []store.Record) { return upsertCommit(4, snap(a1), a4, "bob", "m4") },
		func() (store.Commit, []store.Record) { return deleteCommit(5, b2, "engine") },
		func() (store.Commit, []store.Record) { return upsertCommit(6, snap(x3), x6, "alice", "") },
	}
	for _, step := range steps {
		c, recs := step()
		commitOne(t, s, "s", c, recs)
	}
	return map[string]store.Record{"a1": a1, "b2": b2, "x3": x3, "a4": a4, "x6": x6}
}

func TestWriteAndRead(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	recs := fixture(t, s)
	sp, err := s.SpaceGet(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if sp.Head != 6 || sp.Horizon != 0 {
		t.Fatalf("space = %+v, want head 6 horizon 0", sp)
	}
	got, err := s.EntityGet(ctx, "s", store.EntityKey{Type: "task", ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs["a4"]) {
		t.Fatalf("entity = %+v, want %+v", got, recs["a4"])
	}
	tomb, err := s.EntityGet(ctx, "s", store.EntityKey{Type: "task", ID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if tomb.Kind != store.KindDeleted || tomb.Version != 5 {
		t.Fatalf("tombstone = %+v", tomb)
	}
	if _, err := s.EntityGet(ctx, "s", store.EntityKey{Type: "task", ID: "zz"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing entity: %v, want ErrNotFound", err)
	}
}

func TestRows(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	fixture(t, s)
	tests := []struct {
		name string
		p    store.RowsParams
		want []int64
	}{
		{"all", store.RowsParams{Hi: 6}, []int64{1, 2, 3, 4, 5, 6}},
		{"desc", store.RowsParams{Hi: 6, Desc: true}, []int64{6, 5, 4, 3, 2, 1}},
		{"limit", store.RowsParams{Hi: 6, Limit: 2}, []int64{1, 2}},
		{"desc limit", store.RowsParams{Hi: 6, Limit: 2, Desc: true}, []int64{6, 5}},
		{"range", store.RowsParams{Lo: 2, Hi: 5}, []int64{3, 4, 5}},
		{"empty range", store.RowsParams{Lo: 6, Hi: 6}, []int64{}},
		{"types", store.RowsParams{Hi: 6, Filter: store.RowFilter{Types: []string{"task"}}}, []int64{1, 2, 4, 5}},
		{"ops", store.RowsParams{Hi: 6, Filter: store.RowFilter{Ops: []string{"create"}}}, []int64{1, 2, 3}},
		{"actors", store.RowsParams{Hi: 6, Filter: store.RowFilter{Actors: []string{"alice"}}}, []int64{1, 3, 6}},
		{"exclude types", store.RowsParams{Hi: 6, Filter: store.RowFilter{ExcludeTypes: []string{"task"}}}, []int64{3, 6}},
		{"exclude ops", store.RowsParams{Hi: 6, Filter: store.RowFilter{ExcludeOps: []string{"update"}}}, []int64{1, 2, 3, 5}},
		{"exclude actors", store.RowsParams{Hi: 6, Filter: store.RowFilter{ExcludeActors: []string{"alice", "engine"}}}, []int64{2, 4}},
		{"entity", store.RowsParams{Hi: 6, Filter: store.RowFilter{EntityType: "task", EntityID: "a"}}, []int64{1, 4}},
		{"entity desc", store.RowsParams{Hi: 6, Desc: true, Filter: store.RowFilter{EntityType: "task", EntityID: "a"}}, []int64{4, 1}},
		{"entity range", store.RowsParams{Lo: 1, Hi: 6, Filter: store.RowFilter{EntityType: "task", EntityID: "a"}}, []int64{4}},
		{"entity other type", store.RowsParams{Hi: 6, Filter: store.RowFilter{EntityType: "note", EntityID: "a"}}, []int64{}},
		{"combined", store.RowsParams{Hi: 6, Filter: store.RowFilter{Types: []string{"task"}, Actors: []string{"bob"}}}, []int64{2, 4}},
		{"other space", store.RowsParams{Space: "t", Hi: 6}, []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.p
			if p.Space == "" {
				p.Space = "s"
			}
			rows, err := s.Rows(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if got := seqs(rows); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("seqs = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRowShape(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	fixture(t, s)
	rows, err := s.Rows(context.Background(), store.RowsParams{Space: "s", Lo: 3, Hi: 4})
	if err != nil {
		t.Fatal(err)
	}
	want := store.Row{Seq: 4, TS: baseTime.Add(4 * time.Second), Actor: "bob", Op: "update",
		EntityID: "a", Type: "task", Payload: json.RawMessage(`{"seq":4}`)}
	if len(rows) != 1 || !reflect.DeepEqual(rows[0], want) {
		t.Fatalf("rows = %+v, want %+v", rows, want)
	}
}

func TestCommits(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	recs := fixture(t, s)
	all, err := s.Commits(ctx, store.CommitsParams{Space: "s", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 6 {
		t.Fatalf("got %d commits, want 6", len(all))
	}
	a1 := recs["a1"]
	wantC, _ := upsertCommit(4, &store.Record{Type: "task", ID: "a", Version: 1,
		Properties: a1.Properties, Links: []store.Link{}, CreatedAt: a1.CreatedAt, UpdatedAt: a1.UpdatedAt},
		recs["a4"], "bob", "m4")
	if !reflect.DeepEqual(all[3], wantC) {
		t.Fatalf("commit 4 =\n%+v\nwant\n%+v", all[3], wantC)
	}
	del := all[4]
	if del.Changes[0].After != nil || del.Changes[0].Before == nil || del.Receipt.Accepted == nil || del.Receipt.Rejected == nil {
		t.Fatalf("delete commit = %+v", del)
	}
	page, err := s.Commits(ctx, store.CommitsParams{Space: "s", After: 2, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].Seq != 3 || page[1].Seq != 4 || len(page[0].Changes) != 1 || len(page[1].Changes) != 1 {
		t.Fatalf("page = %+v", page)
	}
	empty, err := s.Commits(ctx, store.CommitsParams{Space: "s", After: 6, Limit: 2})
	if err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("empty page = %v, %v", empty, err)
	}
}

func TestCommitManyChanges(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	newSpace(t, s, "s")
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for seq := int64(1); seq <= 3; seq++ {
		c, recs := upsertCommit(seq, nil, live("t", fmt.Sprint(seq), seq, `{}`), "a", "")
		for o := int(seq) - 1; o >= 1; o-- { // commit n has n changes, appended out of order
			ch := c.Changes[0]
			ch.Ordinal, ch.ID = o, fmt.Sprintf("%d.x", seq)
			c.Changes = append(c.Changes, ch)
		}
		if err := tx.Append(ctx, c, recs); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.Commits(ctx, store.CommitsParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range got {
		if len(c.Changes) != i+1 {
			t.Fatalf("commit %d has %d changes, want %d", c.Seq, len(c.Changes), i+1)
		}
		for o, ch := range c.Changes {
			if ch.Ordinal != o {
				t.Fatalf("commit %d change %d has ordinal %d", c.Seq, o, ch.Ordinal)
			}
		}
	}
}

func TestEntityList(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	fixture(t, s)
	tests := []struct {
		name string
		p    store.EntityListParams
		want []string
	}{
		{"live only", store.EntityListParams{Type: "task"}, []string{"a"}},
		{"as of before delete", store.EntityListParams{Type: "task", AsOf: 4}, []string{"a", "b"}},
		{"as of delete", store.EntityListParams{Type: "task", AsOf: 5}, []string{"a"}},
		{"after", store.EntityListParams{Type: "task", AsOf: 4, After: "a"}, []string{"b"}},
		{"limit", store.EntityListParams{Type: "task", AsOf: 4, Limit: 1}, []string{"a"}},
		{"other type", store.EntityListParams{Type: "note"}, []string{"x"}},
		{"unknown type", store.EntityListParams{Type: "nope"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.p
			p.Space = "s"
			recs, err := s.EntityList(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, r := range recs {
				got = append(got, r.ID)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ids = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEntityListBytewise(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	newSpace(t, s, "s")
	ids := []string{"b", "B", "a", "é", "Z", "_", "aa", "~"}
	for i, id := range ids {
		seq := int64(i + 1)
		c, recs := upsertCommit(seq, nil, live("t", id, seq, `{}`), "a", "")
		commitOne(t, s, "s", c, recs)
	}
	recs, err := s.EntityList(context.Background(), store.EntityListParams{Space: "s", Type: "t"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"B", "Z", "_", "a", "aa", "b", "~", "é"}
	got := []string{}
	for _, r := range recs {
		got = append(got, r.ID)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ids = %q, want %q", got, want)
	}
}

func TestFirstChangesAfter(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	recs := fixture(t, s)
	ta, tb, nx := store.EntityKey{Type: "task", ID: "a"}, store.EntityKey{Type: "task", ID: "b"}, store.EntityKey{Type: "note", ID: "x"}
	missing := store.EntityKey{Type: "task", ID: "zz"}
	got, err := s.FirstChangesAfter(ctx, "s", 1, []store.EntityKey{ta, tb, nx, missing, ta})
	if err != nil {
		t.Fatal(err)
	}
	versions := map[store.EntityKey]int64{}
	for k, ch := range got {
		versions[k] = ch.Version
	}
	want := map[store.EntityKey]int64{ta: 4, tb: 2, nx: 3}
	if !reflect.DeepEqual(versions, want) {
		t.Fatalf("versions = %v, want %v", versions, want)
	}
	if b := got[ta].Before; b == nil || b.Version != 1 || string(b.Properties) != string(recs["a1"].Properties) {
		t.Fatalf("task/a before = %+v", b)
	}
	if got[nx].Before != nil || got[nx].Kind != store.ChangeCreated {
		t.Fatalf("note/x first change = %+v", got[nx])
	}
	got, err = s.FirstChangesAfter(ctx, "s", 4, []store.EntityKey{ta, tb, nx})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got[ta]; ok || got[tb].Version != 5 || got[tb].After != nil || got[nx].Version != 6 {
		t.Fatalf("after 4 = %+v", got)
	}
	got, err = s.FirstChangesAfter(ctx, "s", 0, nil)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no keys = %v, %v", got, err)
	}
}

// twoEntityCommit builds a merge-like commit: it updates primary and
// deletes second.
func twoEntityCommit(seq int64, primary, second store.Record) (store.Commit, []store.Record) {
	c, recs := upsertCommit(seq, &primary, primary, "a", "")
	c.Op = "merge"
	d, tomb := deleteCommit(seq, second, "a")
	ch := d.Changes[0]
	ch.Ordinal = 1
	c.Changes = append(c.Changes, ch)
	return c, append(recs, tomb...)
}

func TestFirstChangesAfterSecondEntity(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	newSpace(t, s, "s")
	a, b, x := live("task", "a", 1, `{"v":1}`), live("task", "b", 2, `{"v":2}`), live("note", "x", 3, `{}`)
	for i, r := range []store.Record{a, b, x} {
		c, recs := upsertCommit(int64(i+1), nil, r, "a", "")
		commitOne(t, s, "s", c, recs)
	}
	c, recs := twoEntityCommit(4, a, b)
	commitOne(t, s, "s", c, recs)
	// A commit naming note/x that changes nothing: the lookup must look past it.
	empty, _ := upsertCommit(5, nil, x, "a", "")
	empty.Changes = nil
	commitOne(t, s, "s", empty, nil)
	c, recs = upsertCommit(6, &x, x, "a", "")
	commitOne(t, s, "s", c, recs)

	ka, kb, kx := a.Key(), b.Key(), x.Key()
	tests := []struct {
		after int64
		want  map[store.EntityKey]string // key -> kind@version
	}{
		{0, map[store.EntityKey]string{ka: "created@1", kb: "created@2", kx: "created@3"}},
		{2, map[store.EntityKey]string{ka: "updated@4", kb: "deleted@4", kx: "created@3"}},
		{3, map[store.EntityKey]string{ka: "updated@4", kb: "deleted@4", kx: "updated@6"}},
		{4, map[store.EntityKey]string{kx: "updated@6"}},
		{6, map[store.EntityKey]string{}},
	}
	for _, tt := range tests {
		got, err := s.FirstChangesAfter(ctx, "s", tt.after, []store.EntityKey{ka, kb, kx})
		if err != nil {
			t.Fatal(err)
		}
		have := map[store.EntityKey]string{}
		for k, ch := range got {
			if ch.Type != k.Type || ch.ID != k.ID {
				t.Fatalf("after %d: change of %v filed under %v", tt.after, ch, k)
			}
			have[k] = fmt.Sprintf("%s@%d", ch.Kind, ch.Version)
		}
		if !reflect.DeepEqual(have, tt.want) {
			t.Fatalf("after %d = %v, want %v", tt.after, have, tt.want)
		}
	}
	// Entity history stays on the primary entity.
	rows, err := s.Rows(ctx, store.RowsParams{Space: "s", Hi: 6, Filter: store.RowFilter{EntityType: "task", EntityID: "b"}})
	if err != nil || !reflect.DeepEqual(seqs(rows), []int64{2}) {
		t.Fatalf("task/b history = %v, %v", seqs(rows), err)
	}
}

func TestAppendRefusesUnstorableChanges(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	newSpace(t, s, "s")
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	third, _ := upsertCommit(1, nil, live("t", "a", 1, `{}`), "a", "")
	for i, id := range []string{"b", "c"} {
		ch := third.Changes[0]
		ch.Ordinal, ch.ID = i+1, id
		third.Changes = append(third.Changes, ch)
	}
	dup, _ := upsertCommit(1, nil, live("t", "a", 1, `{}`), "a", "")
	dup.Changes = append(dup.Changes, dup.Changes[0])
	for name, c := range map[string]store.Commit{"third entity": third, "duplicate ordinal": dup} {
		if err := tx.Append(ctx, c, nil); err == nil {
			t.Fatalf("%s: append succeeded", name)
		}
	}
	// Refused before any statement: the transaction goes on.
	c, recs := upsertCommit(1, nil, live("t", "a", 1, `{}`), "a", "")
	if err := tx.Append(ctx, c, recs); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
