package changelog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// errConnReset stands for a connection that broke while COMMIT was in
// flight.
var errConnReset = errors.New("connection reset by peer")

// Fault modes of commitFaultStore.
const (
	faultNone   = iota
	faultLanded // the transaction commits, Commit still fails
	faultLost   // the transaction rolls back, Commit fails
)

// commitFaultStore fails the Commit of the write transaction after the
// next skip ones, in mode; with probeFails, CommitLanded cannot answer.
type commitFaultStore struct {
	store.Store
	mu         sync.Mutex
	skip       int
	mode       int
	probeFails bool
	probes     atomic.Int32
}

func (s *commitFaultStore) arm(skip, mode int, probeFails bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skip, s.mode, s.probeFails = skip, mode, probeFails
}

// next returns the fault mode of the transaction being committed.
func (s *commitFaultStore) next() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode == faultNone {
		return faultNone
	}
	if s.skip > 0 {
		s.skip--
		return faultNone
	}
	m := s.mode
	s.mode = faultNone
	return m
}

func (s *commitFaultStore) WriteBegin(ctx context.Context, p store.WriteBeginParams) (store.WriteTx, error) {
	tx, err := s.Store.WriteBegin(ctx, p)
	if err != nil {
		return nil, err
	}
	return &faultTx{WriteTx: tx, s: s}, nil
}

func (s *commitFaultStore) CommitLanded(ctx context.Context, space string, seq, writeID int64) (bool, error) {
	s.probes.Add(1)
	s.mu.Lock()
	fails := s.probeFails
	s.mu.Unlock()
	if fails {
		return false, fmt.Errorf("probe: %w", store.ErrUnavailable)
	}
	return s.Store.CommitLanded(ctx, space, seq, writeID)
}

type faultTx struct {
	store.WriteTx
	s *commitFaultStore
}

func (tx *faultTx) Commit(ctx context.Context) error {
	switch tx.s.next() {
	case faultLanded:
		if err := tx.WriteTx.Commit(ctx); err != nil {
			return err
		}
		return errConnReset
	case faultLost:
		_ = tx.WriteTx.Rollback(ctx)
		return errConnReset
	}
	return tx.WriteTx.Commit(ctx)
}

// ambiguousHarness is a log over a commitFaultStore with task "p" at
// version 1 and task "d" at version 2 (seqs 1, 2).
func ambiguousHarness(t *testing.T, st store.Store) (*changelog.Log, *commitFaultStore) {
	t.Helper()
	fs := &commitFaultStore{Store: st}
	lg, _ := newLog(t, fs)
	for _, m := range []changelog.Mutation{putTask("p", `{"n":1}`), putTask("d", `{"n":1}`)} {
		if _, err := lg.Write(context.Background(), changelog.WriteRequest{Space: "s", Provenance: apiProv, Mutations: []changelog.Mutation{m}}); err != nil {
			t.Fatal(err)
		}
	}
	return lg, fs
}

// threeWrites are the three requests: a first-time PUT, an
// If-Match PATCH and a DELETE, with mutation ids when keyed.
func threeWrites(keyed bool) []changelog.Mutation {
	v := int64(1)
	ms := []changelog.Mutation{
		putTask("new", `{"n":1}`),
		{Op: changelog.OpPatch, Type: "task", EntityID: "p", Patch: []byte(`{"n":2}`), IfVersion: &v, IfMatch: true},
		{Op: changelog.OpDelete, Type: "task", EntityID: "d"},
	}
	if keyed {
		for i := range ms {
			ms[i].MutationID = fmt.Sprintf("key-%d", i)
		}
	}
	return ms
}

// writeGrouped runs ms as one request each, all in one group commit:
// a blocker holds the space's transaction open until they are queued.
func writeGrouped(t *testing.T, lg *changelog.Log, ms []changelog.Mutation) ([]changelog.WriteResult, []error) {
	t.Helper()
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	blocker := changelog.WriteRequest{Space: "s", Provenance: apiProv,
		Mutations: []changelog.Mutation{putTask("blocker", `{"n":1}`)},
		Effects: func(context.Context, store.WriteTx, changelog.WriteResult) error {
			close(entered)
			<-release
			return nil
		}}
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := lg.Write(ctx, blocker); err != nil {
			t.Errorf("blocker: %v", err)
		}
	})
	<-entered
	results, errs := make([]changelog.WriteResult, len(ms)), make([]error, len(ms))
	for i, m := range ms {
		wg.Go(func() {
			results[i], errs[i] = lg.Write(ctx, changelog.WriteRequest{Space: "s", Provenance: apiProv, Mutations: []changelog.Mutation{m}})
		})
	}
	for changelog.QueueLen(lg, "s") < len(ms) {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	return results, errs
}

// checkApplied checks that each of the three writes was answered applied
// (the PUT as a creation) and that the log holds each exactly once after
// the blocker's commit: seqs 3 (blocker) to 6.
func checkApplied(t *testing.T, lg *changelog.Log, results []changelog.WriteResult, errs []error) {
	t.Helper()
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if r := results[i].Receipts[0]; r.Status != store.ReceiptApplied {
			t.Errorf("request %d answered %s (%+v), but it was applied", i, r.Status, r.Reason)
		}
	}
	if !results[0].Created[0] {
		t.Error("the first-time PUT was not answered as a creation")
	}
	checkLogOnce(t, lg)
}

// checkLogOnce checks that the log holds the blocker and the three
// writes once each, at seqs 3 to 6.
func checkLogOnce(t *testing.T, lg *changelog.Log) {
	t.Helper()
	page, err := lg.Pull(context.Background(), "s", 2, 100)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, c := range page.Commits {
		count[c.Op+" "+c.EntityID]++
	}
	want := map[string]int{"put blocker": 1, "put new": 1, "patch p": 1, "delete d": 1}
	if fmt.Sprint(count) != fmt.Sprint(want) || head(t, lg) != 6 {
		t.Fatalf("log after seq 2 = %v at head %d, want %v at head 6", count, head(t, lg), want)
	}
}

// TestAmbiguousCommitLanded: the group's COMMIT fails but landed; every
// request is answered from what was committed, none is retried.
func TestAmbiguousCommitLanded(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		lg, fs := ambiguousHarness(t, st)
		fs.arm(1, faultLanded, false)
		results, errs := writeGrouped(t, lg, threeWrites(false))
		checkApplied(t, lg, results, errs)
		if fs.probes.Load() != 1 {
			t.Errorf("%d probes, want 1", fs.probes.Load())
		}
	})
}

// TestAmbiguousCommitLost: the group's COMMIT fails and did not land;
// every request is retried and applied once.
func TestAmbiguousCommitLost(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		lg, fs := ambiguousHarness(t, st)
		fs.arm(1, faultLost, false)
		results, errs := writeGrouped(t, lg, threeWrites(false))
		checkApplied(t, lg, results, errs)
	})
}

// TestAmbiguousCommitSingle: a one-request group whose COMMIT failed is
// answered from the log when it landed and retried when it did not.
func TestAmbiguousCommitSingle(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		lg, fs := ambiguousHarness(t, st)
		for i, mode := range []int{faultLanded, faultLost} {
			fs.arm(0, mode, false)
			m := putTask(fmt.Sprintf("single-%d", i), `{"n":1}`)
			res, err := lg.Write(context.Background(), changelog.WriteRequest{Space: "s", Provenance: apiProv, Mutations: []changelog.Mutation{m}})
			if err != nil || res.Receipts[0].Status != store.ReceiptApplied || !res.Created[0] {
				t.Fatalf("mode %d: %+v, %v", mode, res, err)
			}
		}
		if h := head(t, lg); h != 4 {
			t.Fatalf("head %d, want 4", h)
		}
	})
}

// TestAmbiguousCommitUnknown: when the store cannot say whether the
// group landed, every request is answered unavailable, and a retry with
// the same mutation ids (Idempotency-Key) gets the stored receipts.
func TestAmbiguousCommitUnknown(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, st store.Store) {
		lg, fs := ambiguousHarness(t, st)
		changelog.SetProbe(lg, 2, time.Millisecond)
		fs.arm(1, faultLanded, true)
		ms := threeWrites(true)
		_, errs := writeGrouped(t, lg, ms)
		for i, err := range errs {
			if problem.CodeOf(err) != problem.Unavailable {
				t.Errorf("request %d: %v, want unavailable", i, err)
			}
		}
		fs.arm(0, faultNone, false)
		results := make([]changelog.WriteResult, len(ms))
		for i, m := range ms {
			results[i], errs[i] = lg.Write(context.Background(), changelog.WriteRequest{Space: "s", Provenance: apiProv, Mutations: []changelog.Mutation{m}})
		}
		checkApplied(t, lg, results, errs)
	})
}
