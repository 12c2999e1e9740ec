package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/storetest"
)

// TestSpaceMemo: a write transaction takes the space row its
// connection's last commit left only while nothing else wrote: not after
// another connection committed, nor after another write transaction on
// the same connection (an epoch rotation, a type definition, a prune).
func TestSpaceMemo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eddy.db")
	open := func() *Store {
		return storetest.Migrated(t, func(ctx context.Context) (*Store, error) { return Open(ctx, path) })
	}
	a, b := open(), open()
	newSpace(t, a, "s")
	seq := int64(0)
	put := func(s *Store) {
		t.Helper()
		seq++
		c, recs := upsertCommit(seq, nil, live("task", "t"+string(rune('a'+seq)), seq, `{}`), "u", "")
		commitOne(t, s, "s", c, recs)
	}
	// plant marks a's memo of s, so a begin that takes it shows.
	plant := func() {
		t.Helper()
		a.memos.mu.Lock()
		defer a.memos.mu.Unlock()
		sm, ok := a.memos.m["s"]
		if !ok {
			t.Fatal("a commit left no memo")
		}
		sm.space.Epoch = "planted"
		a.memos.m["s"] = sm
	}
	begin := func() store.Space {
		t.Helper()
		tx, err := a.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		return tx.Space()
	}

	put(a)
	plant()
	if sp := begin(); sp.Epoch != "planted" || sp.Head != 1 {
		t.Fatalf("nothing wrote since the commit: began at %+v, want the memo (epoch planted, head 1)", sp)
	}
	if sp := begin(); sp.Epoch == "planted" {
		t.Fatalf("a rolled-back transaction left its memo: %+v", sp)
	}

	put(a)
	put(b) // another connection: a's data_version moves
	plant()
	if sp := begin(); sp.Epoch == "planted" || sp.Head != 3 {
		t.Fatalf("after another connection's commit: began at %+v, want the row read (head 3)", sp)
	}

	for name, write := range map[string]func() error{
		"epoch rotation": func() error { _, err := a.SpaceEpochRotate(ctx, "s", "ep-2"); return err },
		"type definition": func() error {
			_, err := a.TypeDefPut(ctx, "s", store.TypeDef{Type: "task", Def: []byte(`{}`)})
			return err
		},
		"prune": func() error { _, err := a.SpacePrune(ctx, "s", 1); return err },
	} {
		put(a)
		plant()
		if err := write(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := a.SpaceGet(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if sp := begin(); sp != want {
			t.Fatalf("after the %s on the same connection: began at %+v, want the row %+v", name, sp, want)
		}
	}

	// A delivery's completion writes neither the space's row nor its
	// commits: the memo stays.
	put(a)
	plant()
	errs, err := a.DeliveryUpdateMany(ctx, []store.DeliveryUpdate{{Space: "s", ID: "none", Status: store.DeliverySucceeded}})
	if err != nil || len(errs) != 1 || !errors.Is(errs[0], store.ErrNotFound) {
		t.Fatalf("completing a missing delivery: %v, %v", errs, err)
	}
	if sp := begin(); sp.Epoch != "planted" {
		t.Fatalf("after a delivery's completion: began at %+v, want the memo", sp)
	}
}

// TestSpaceMemoGenerations: a commit records its memo only if no other
// transaction began after its own; a drop voids the records under way.
func TestSpaceMemoGenerations(t *testing.T) {
	t.Parallel()
	var ms spaceMemos
	memo := func(head int64) spaceMemo { return spaceMemo{space: store.Space{ID: "s", Head: head}} }
	_, _, g1 := ms.begin("s", 7)
	_, _, g2 := ms.begin("s", 7)
	ms.committed(g2, memo(2))
	ms.committed(g1, memo(1)) // late: g2 began after g1
	if sm, ok, _ := ms.begin("s", 7); !ok || sm.space.Head != 2 {
		t.Fatalf("memo = %+v, %v; want the later transaction's head 2", sm, ok)
	}
	_, _, g4 := ms.begin("s", 7)
	ms.drop()
	ms.committed(g4, memo(4))
	if sm, ok, _ := ms.begin("s", 7); ok {
		t.Fatalf("a record under way when another write ran was kept: %+v", sm)
	}
	_, _, g6 := ms.begin("s", 7)
	ms.committed(g6, memo(6))
	if sm, ok, _ := ms.begin("s", 8); ok {
		t.Fatalf("a memo outlived a data_version change: %+v", sm)
	}
}
