package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// ExerciseConcurrency checks ordering and visibility under concurrent
// writers: pollers reading while many writers (through several Logs, so
// through several group committers contending for the database's space
// lock) append to one space must see every seq exactly once and in order;
// spaces written in parallel each end gapless; raw write transactions
// racing for one space serialize on its lock.
func ExerciseConcurrency(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	t.Run("PollersSeeEverySeqInOrder", func(t *testing.T) { testPollers(t, open) })
	t.Run("SpacesInParallel", func(t *testing.T) { testSpacesInParallel(t, open) })
	t.Run("RawLock", func(t *testing.T) { testRawLock(t, open) })
	t.Run("ManySpacesAtOnce", func(t *testing.T) { testManySpaces(t, open) })
}

// testManySpaces writes the first commit of many more spaces than a
// driver is likely to have connections, all at once, through one Log:
// every write transaction holds a connection, so nothing on the write
// path may wait for a second one.
func testManySpaces(t *testing.T, open OpenFunc) {
	const spaces = 80
	st := open(t)
	l := logs(t, st, 1, newWaker())[0]
	ctx := context.Background()
	for i := range spaces {
		if _, err := l.CreateSpace(ctx, fmt.Sprintf("sp%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	errs := make(chan error, spaces)
	var wg sync.WaitGroup
	for i := range spaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := l.Write(ctx, changelog.WriteRequest{Space: fmt.Sprintf("sp%d", i), Provenance: owner,
				Mutations: []changelog.Mutation{put("item", "x", `{"a":1}`)}})
			if err == nil && res.Receipts[0].Seq != 1 {
				err = fmt.Errorf("receipt %s, want seq 1", js(res.Receipts[0]))
			}
			if err != nil {
				errs <- fmt.Errorf("space sp%d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("%v (after %s)", err, time.Since(start).Round(time.Millisecond))
	}
}

// waker wakes pollers when any Log commits.
type waker struct {
	mu   sync.Mutex
	head int64
	ch   chan struct{}
}

func newWaker() *waker { return &waker{ch: make(chan struct{})} }

func (w *waker) notify(_ string, head int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.head = max(w.head, head)
	close(w.ch)
	w.ch = make(chan struct{})
}

// wait returns once a commit past after was announced, ctx ends or a
// short fallback passes (in case a Log does not call OnCommit).
func (w *waker) wait(ctx context.Context, after int64) {
	w.mu.Lock()
	if w.head > after {
		w.mu.Unlock()
		return
	}
	ch := w.ch
	w.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	case <-time.After(50 * time.Millisecond):
	}
}

// logs builds n Logs over one store, all announcing commits to w.
func logs(t *testing.T, st store.Store, n int, w *waker) []*changelog.Log {
	t.Helper()
	out := make([]*changelog.Log, n)
	for i := range out {
		out[i] = changelog.New(st, changelog.Options{OnCommit: w.notify})
		l := out[i]
		t.Cleanup(func() { _ = l.Close() })
	}
	return out
}

// runWriters runs writers goroutines, each making each single-mutation
// writes through log(w), and sends every acknowledged seq to the returned
// channel; errors are reported at the end.
func runWriters(t *testing.T, space string, writers, each int, log func(w int) *changelog.Log) []int64 {
	t.Helper()
	seqs := make(chan int64, writers*each)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m := put("item", fmt.Sprintf("%s-w%d-%d", space, w, i%7), fmt.Sprintf(`{"i":%d}`, i))
				res, err := log(w).Write(context.Background(), changelog.WriteRequest{Space: space, Provenance: owner,
					Mutations: []changelog.Mutation{m}})
				if err != nil {
					errs <- fmt.Errorf("writer %d write %d: %w", w, i, err)
					return
				}
				if r := res.Receipts[0]; r.Status != store.ReceiptApplied {
					errs <- fmt.Errorf("writer %d write %d: receipt %s", w, i, js(r))
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
		t.Error(err)
	}
	var out []int64
	for s := range seqs {
		out = append(out, s)
	}
	return out
}

func testPollers(t *testing.T, open OpenFunc) {
	const writers, each, pollers = 8, 200, 3
	const total = writers * each
	st := open(t)
	w := newWaker()
	ls := logs(t, st, 4, w)
	if _, err := ls[0].CreateSpace(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	perr := make(chan error, pollers)
	var pwg sync.WaitGroup
	for p := range pollers {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			perr <- poll(ctx, ls[p%len(ls)], w, total)
		}()
	}
	acks := runWriters(t, "s", writers, each, func(w int) *changelog.Log { return ls[w%len(ls)] })
	pwg.Wait()
	close(perr)
	for err := range perr {
		if err != nil {
			t.Error(err)
		}
	}
	ch := make(chan int64, len(acks))
	for _, s := range acks {
		ch <- s
	}
	close(ch)
	wantExactlyOnce(t, ch, total)
	sp, err := ls[0].Space(context.Background(), "s")
	if err != nil || sp.Head != total {
		t.Fatalf("space = %s, %v; want head %d", js(sp), err, total)
	}
}

// poll reads forward with cursor = the last seq seen until it has seen
// total rows; every row must be the successor of the one before.
func poll(ctx context.Context, l *changelog.Log, w *waker, total int64) error {
	var last int64
	for last < total {
		p, err := l.Read(ctx, "s", last, changelog.Filter{}, 100)
		if err != nil {
			return fmt.Errorf("poller at %d: %w", last, err)
		}
		for _, r := range p.Rows {
			if r.Seq != last+1 {
				return fmt.Errorf("poller at %d saw seq %d: a gap or a repeat", last, r.Seq)
			}
			last = r.Seq
		}
		if len(p.Rows) == 0 {
			if ctx.Err() != nil {
				return fmt.Errorf("poller stuck at %d: %w", last, ctx.Err())
			}
			w.wait(ctx, last)
		}
	}
	return nil
}

func testSpacesInParallel(t *testing.T, open OpenFunc) {
	const spaces, writers, each = 4, 4, 50
	st := open(t)
	ls := logs(t, st, 2, newWaker())
	var wg sync.WaitGroup
	acks := make([][]int64, spaces)
	for s := range spaces {
		id := fmt.Sprintf("sp%d", s)
		if _, err := ls[0].CreateSpace(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			acks[s] = runWriters(t, id, writers, each, func(w int) *changelog.Log { return ls[w%len(ls)] })
		}()
	}
	wg.Wait()
	for s := range spaces {
		id := fmt.Sprintf("sp%d", s)
		ch := make(chan int64, len(acks[s]))
		for _, a := range acks[s] {
			ch <- a
		}
		close(ch)
		wantExactlyOnce(t, ch, writers*each)
		p, err := ls[1].Pull(context.Background(), id, 0, writers*each)
		if err != nil || len(p.Commits) != writers*each || p.HasMore {
			t.Fatalf("pull %s: %d commits, %v", id, len(p.Commits), err)
		}
		for i, c := range p.Commits {
			if c.Seq != int64(i+1) || len(c.EntityID) < len(id) || c.EntityID[:len(id)] != id {
				t.Fatalf("space %s commit %d = seq %d entity %s", id, i, c.Seq, c.EntityID)
			}
		}
	}
}

func testRawLock(t *testing.T, open OpenFunc) {
	const writers, each = 8, 40
	st := open(t)
	if _, err := st.SpaceCreate(ctx0, "s", "e"); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := rawIncrement(st, fmt.Sprintf("w%d", w), i); err != nil {
					errs <- fmt.Errorf("writer %d commit %d: %w", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sp, err := st.SpaceGet(ctx0, "s")
	if err != nil || sp.Head != writers*each {
		t.Fatalf("space = %s, %v; want head %d", js(sp), err, writers*each)
	}
	rows, err := st.Rows(ctx0, store.RowsParams{Space: "s", Lo: 0, Hi: sp.Head, Limit: writers * each})
	if err != nil || len(rows) != writers*each {
		t.Fatalf("rows: %d, %v", len(rows), err)
	}
	for i, r := range rows {
		if r.Seq != int64(i+1) {
			t.Fatalf("row %d has seq %d", i, r.Seq)
		}
	}
	for w := range writers {
		rec, err := st.EntityGet(ctx0, "s", store.EntityKey{Type: "counter", ID: fmt.Sprintf("w%d", w)})
		if err != nil || string(rec.Properties) != fmt.Sprintf(`{"n":%d}`, each-1) {
			t.Fatalf("counter w%d = %s, %v", w, js(rec), err)
		}
	}
}

// rawIncrement appends one commit at the locked head + 1, as a Log would.
func rawIncrement(st store.Store, id string, n int) error {
	key := store.EntityKey{Type: "counter", ID: id}
	tx, err := st.WriteBegin(ctx0, store.WriteBeginParams{Space: "s", Entities: []store.EntityKey{key}})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx0) }()
	seq := tx.Space().Head + 1
	var before *store.Record
	if r, ok := tx.Entities()[key]; ok {
		before = &r
	}
	c, rec := rawCommit(seq, key, fmt.Sprintf(`{"n":%d}`, n), before, "")
	if before == nil && n != 0 || before != nil && string(before.Properties) != fmt.Sprintf(`{"n":%d}`, n-1) {
		return fmt.Errorf("loaded %s before write %d", js(before), n)
	}
	c.Payload = json.RawMessage(`{"properties":["n"]}`)
	if err := tx.Append(ctx0, c, []store.Record{rec}); err != nil {
		return err
	}
	return tx.Commit(ctx0)
}
