package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/storetest"
)

func TestReceipts(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	recs := fixture(t, s)
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	noop := store.StoredReceipt{MutationID: "m7", Receipt: store.Receipt{MutationID: "m7", Status: store.ReceiptNoop},
		CreatedAt: baseTime.Add(7 * time.Second)}
	old := store.StoredReceipt{MutationID: "m-old", Receipt: store.Receipt{MutationID: "m-old", Status: store.ReceiptRejected,
		Reason: &store.Reason{Code: "conflict", Message: "no"}}, CreatedAt: baseTime.Add(-time.Hour)}
	for _, r := range []store.StoredReceipt{noop, old} {
		if err := tx.ReceiptPut(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	tx, err = s.WriteBegin(ctx, store.WriteBeginParams{Space: "s",
		MutationIDs: []string{"m1", "m4", "m7", "m-old", "m-none"}, ReceiptsSince: baseTime})
	if err != nil {
		t.Fatal(err)
	}
	got := tx.Receipts()
	if len(got) != 3 {
		t.Fatalf("receipts = %v, want m1 m4 m7", got)
	}
	a4 := recs["a4"]
	a4.Kind, a4.GroupVersions = "", nil
	if r := got["m4"]; r.Receipt.Seq != 4 || r.Entity == nil || !reflect.DeepEqual(*r.Entity, a4) || !r.CreatedAt.Equal(baseTime.Add(4*time.Second)) {
		t.Fatalf("m4 = %+v", r)
	}
	// Stored receipts round-trip exactly, nil slices included.
	if r := got["m7"]; r.Entity != nil || !reflect.DeepEqual(r.Receipt, noop.Receipt) {
		t.Fatalf("m7 = %+v", r)
	}
	// Replacing an expired receipt makes it current again.
	old.CreatedAt = baseTime.Add(8 * time.Second)
	if err := tx.ReceiptPut(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err = s.WriteBegin(ctx, store.WriteBeginParams{Space: "s", MutationIDs: []string{"m-old"}, ReceiptsSince: baseTime})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	r, ok := tx.Receipts()["m-old"]
	if !ok || r.Receipt.Reason == nil || r.Receipt.Reason.Code != "conflict" {
		t.Fatalf("replaced receipt = %+v, %v", r, ok)
	}
}

func TestWriteBeginLoadsEntities(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	recs := fixture(t, s)
	ta, tb, missing := store.EntityKey{Type: "task", ID: "a"}, store.EntityKey{Type: "task", ID: "b"}, store.EntityKey{Type: "note", ID: "a"}
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s", Entities: []store.EntityKey{ta, tb, missing}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	got := tx.Entities()
	if len(got) != 2 || !reflect.DeepEqual(got[ta], recs["a4"]) || got[tb].Kind != store.KindDeleted {
		t.Fatalf("entities = %+v", got)
	}
	if sp := tx.Space(); sp.ID != "s" || sp.Head != 6 {
		t.Fatalf("space = %+v", sp)
	}
}

func TestPruneKeepsHead(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	fixture(t, s)
	sp, err := s.SpacePrune(ctx, "s", 4)
	if err != nil {
		t.Fatal(err)
	}
	if sp.Head != 6 || sp.Horizon != 4 {
		t.Fatalf("after prune = %+v, want head 6 horizon 4", sp)
	}
	rows, err := s.Rows(ctx, store.RowsParams{Space: "s", Hi: 6})
	if err != nil {
		t.Fatal(err)
	}
	if got := seqs(rows); !reflect.DeepEqual(got, []int64{5, 6}) {
		t.Fatalf("rows after prune = %v", got)
	}
	fc, err := s.FirstChangesAfter(ctx, "s", 0, []store.EntityKey{{Type: "task", ID: "a"}})
	if err != nil || len(fc) != 0 {
		t.Fatalf("pruned changes still visible: %v, %v", fc, err)
	}
	// A lower prune never moves the horizon back; pruning everything keeps the head.
	if sp, err = s.SpacePrune(ctx, "s", 2); err != nil || sp.Horizon != 4 {
		t.Fatalf("lower prune = %+v, %v", sp, err)
	}
	if sp, err = s.SpacePrune(ctx, "s", 6); err != nil || sp.Horizon != 6 || sp.Head != 6 {
		t.Fatalf("full prune = %+v, %v", sp, err)
	}
	if cs, err := s.Commits(ctx, store.CommitsParams{Space: "s"}); err != nil || len(cs) != 0 {
		t.Fatalf("commits after full prune = %v, %v", cs, err)
	}
	// Entities are kept, and the log goes on from the head.
	if _, err := s.EntityGet(ctx, "s", store.EntityKey{Type: "task", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	c, recs := upsertCommit(7, nil, live("task", "c", 7, `{}`), "a", "")
	commitOne(t, s, "s", c, recs)
}

func TestRollbackLeavesNothing(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	newSpace(t, s, "s")
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	c, recs := upsertCommit(1, nil, live("t", "a", 1, `{}`), "a", "m1")
	if err := tx.Append(ctx, c, recs); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("second rollback: %v", err)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("commit after rollback succeeded")
	}
	assertEmpty(t, s, "s")
}

// assertEmpty checks that space has head 0 and no rows, entities or receipts.
func assertEmpty(t *testing.T, s *Store, space string) {
	t.Helper()
	ctx := context.Background()
	sp, err := s.SpaceGet(ctx, space)
	if err != nil || sp.Head != 0 {
		t.Fatalf("space = %+v, %v", sp, err)
	}
	for _, table := range []string{"commits", "entities", "receipts"} {
		var n int
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE space = ?`, space).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("%s has %d rows", table, n)
		}
	}
}

func TestCommitAfterNothingKeepsHead(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	fixture(t, s)
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("rollback after commit: %v", err)
	}
	if sp, err := s.SpaceGet(ctx, "s"); err != nil || sp.Head != 6 {
		t.Fatalf("space = %+v, %v", sp, err)
	}
}

func TestAppendWrongSeq(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	newSpace(t, s, "s")
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, seq := range []int64{0, 2, -1} {
		c, recs := upsertCommit(seq, nil, live("t", "a", seq, `{}`), "a", "")
		if err := tx.Append(ctx, c, recs); err == nil {
			t.Fatalf("append seq %d at head 0 succeeded", seq)
		}
	}
	// A rejected seq writes nothing; the right one still works.
	c, recs := upsertCommit(1, nil, live("t", "a", 1, `{}`), "a", "")
	if err := tx.Append(ctx, c, recs); err != nil {
		t.Fatal(err)
	}
	if err := tx.Append(ctx, c, recs); err == nil {
		t.Fatal("appending seq 1 twice succeeded")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if sp, _ := s.SpaceGet(ctx, "s"); sp.Head != 1 {
		t.Fatalf("head = %d, want 1", sp.Head)
	}
}

func TestFailedAppendCannotCommit(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	newSpace(t, s, "s")
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	c, recs := upsertCommit(1, nil, live("t", "a", 1, `{}`), "a", "")
	recs[0].Kind = "bogus" // the commit row is written, then the entity upsert fails its CHECK
	if err := tx.Append(ctx, c, recs); err == nil {
		t.Fatal("append of a record with a bad kind succeeded")
	}
	if err := tx.Commit(ctx); !errors.Is(err, ErrTxFailed) {
		t.Fatalf("commit after failed append: %v, want ErrTxFailed", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, s, "s")
}

func TestExactBytes(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	newSpace(t, s, "s")
	props := `{"html":"<a href=\"x\">&amp;</a>","n":1.50,"u":"\u00e9"}`
	rec := live("t", "<&>", 1, props)
	rec.Links = nil
	rec.GroupVersions = nil
	c, recs := upsertCommit(1, nil, rec, "a", "")
	c.Payload = json.RawMessage(`{"b":1,"a":"<>"}`)
	commitOne(t, s, "s", c, recs)

	got, err := s.EntityGet(ctx, "s", rec.Key())
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Properties) != props || got.Links == nil || got.GroupVersions != nil {
		t.Fatalf("entity = %+v", got)
	}
	cs, err := s.Commits(ctx, store.CommitsParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	after := cs[0].Changes[0].After
	if string(cs[0].Payload) != `{"b":1,"a":"<>"}` || string(after.Properties) != props || after.Links == nil || after.ID != "<&>" {
		t.Fatalf("commit = %+v, after = %+v", cs[0], after)
	}
}

func TestCancelReleasesWriteLock(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	newSpace(t, s, "s")
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"}); err != nil {
		t.Fatal(err)
	}
	// The transaction above is never ended; cancelling its context must
	// release the write lock.
	cancel()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	tx, err := s.WriteBegin(ctx2, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatalf("write begin after cancel: %v", err)
	}
	if err := tx.Rollback(ctx2); err != nil {
		t.Fatal(err)
	}
}

func TestWriteBeginHonoursContext(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	newSpace(t, s, "s")
	ctx := context.Background()
	held, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Rollback(ctx) }()
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.WriteBegin(wctx, store.WriteBeginParams{Space: "s"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second writer: %v, want DeadlineExceeded", err)
	}
	// Readers are not blocked by the writer.
	if _, err := s.SpaceGet(ctx, "s"); err != nil {
		t.Fatal(err)
	}
}

// TestWriteBeginWaitsForAnotherProcess: a commit waits for another
// process's write lock until its context's deadline, when that comes
// first, or the busy timeout, and begins once the lock is free.
func TestWriteBeginWaitsForAnotherProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eddy.db")
	holder := storetest.Migrated(t, func(ctx context.Context) (*Store, error) { return Open(ctx, path) })
	waiter := storetest.Migrated(t, func(ctx context.Context) (*Store, error) {
		return OpenOptions(ctx, path, Options{BusyTimeout: 300 * time.Millisecond})
	})
	newSpace(t, holder, "s")
	held, err := holder.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatal(err)
	}
	soon, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := waiter.WriteBegin(soon, store.WriteBeginParams{Space: "s"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("another process holds the lock, the deadline comes first: %v, want DeadlineExceeded", err)
	}
	if _, err := waiter.WriteBegin(ctx, store.WriteBeginParams{Space: "s"}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("another process holds the lock past the busy timeout: %v, want the store unavailable (busy)", err)
	}
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err := waiter.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatalf("once the lock is free: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	spaces := []string{"p", "q"}
	for _, sp := range spaces {
		newSpace(t, s, sp)
	}
	const writers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*len(spaces))
	for w := range writers {
		for _, sp := range spaces {
			wg.Go(func() {
				for i := range each {
					if err := appendNext(ctx, s, sp, fmt.Sprintf("w%d-%d", w, i)); err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	// Readers run alongside and must never see a gap.
	stop := make(chan struct{})
	var rg sync.WaitGroup
	rg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := checkGapless(ctx, s, "p"); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(stop)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, sp := range spaces {
		if err := checkGapless(ctx, s, sp); err != nil {
			t.Fatal(err)
		}
		got, _ := s.SpaceGet(ctx, sp)
		if got.Head != writers*each {
			t.Fatalf("space %s head %d, want %d", sp, got.Head, writers*each)
		}
	}
}

// appendNext appends one commit creating entity id at the next seq.
func appendNext(ctx context.Context, s *Store, space, id string) error {
	tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: space, Entities: []store.EntityKey{{Type: "t", ID: id}}})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	seq := tx.Space().Head + 1
	c, recs := upsertCommit(seq, nil, live("t", id, seq, `{}`), "a", "mut-"+id)
	if err := tx.Append(ctx, c, recs); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// checkGapless reads the space's head and verifies rows 1..head exist.
func checkGapless(ctx context.Context, s *Store, space string) error {
	sp, err := s.SpaceGet(ctx, space)
	if err != nil {
		return err
	}
	rows, err := s.Rows(ctx, store.RowsParams{Space: space, Hi: sp.Head})
	if err != nil {
		return err
	}
	for i, r := range rows {
		if r.Seq != int64(i+1) {
			return fmt.Errorf("space %s: row %d has seq %d", space, i, r.Seq)
		}
	}
	if int64(len(rows)) != sp.Head {
		return fmt.Errorf("space %s: %d rows, head %d", space, len(rows), sp.Head)
	}
	return nil
}
