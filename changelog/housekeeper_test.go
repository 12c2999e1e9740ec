package changelog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/sqlite"
	"github.com/eddy-run/eddy/store/storetest"
)

// openSQLite opens a migrated SQLite store closed at cleanup.
func openSQLite(t *testing.T) *sqlite.Store {
	t.Helper()
	return storetest.Migrated(t, func(ctx context.Context) (*sqlite.Store, error) {
		return sqlite.Open(ctx, filepath.Join(t.TempDir(), "eddy.db"))
	})
}

// newLog builds a Log over st with a fake clock and the space "s".
func newLog(t *testing.T, st store.Store) (*changelog.Log, *storetest.Clock) {
	t.Helper()
	clock := storetest.NewClock(time.Date(2026, 8, 4, 12, 0, 0, 0, time.UTC))
	lg := changelog.New(st, changelog.Options{Now: clock.Now, IdempotencyWindow: time.Hour})
	t.Cleanup(func() { _ = lg.Close() })
	if _, err := lg.CreateSpace(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	return lg, clock
}

// writeN applies puts from..from+n-1 with mutation ids to space s, one a
// minute.
func writeN(t *testing.T, lg *changelog.Log, clock *storetest.Clock, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		m := changelog.Mutation{MutationID: fmt.Sprintf("m%d", i), Op: changelog.OpPut, Type: "task",
			EntityID: fmt.Sprintf("t%d", i), Properties: json.RawMessage(`{"n":1}`)}
		req := changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}, Provenance: store.Provenance{Actor: "owner", Via: "api"}}
		if _, err := lg.Write(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
	}
}

// pass is one housekeeping pass as the hook saw it.
type pass struct {
	rep changelog.HousekeepReport
	err error
}

// startHousekeeper starts a housekeeper whose passes arrive on the
// returned channel, and stops it at cleanup.
func startHousekeeper(t *testing.T, lg *changelog.Log, policy changelog.Retention, logger *slog.Logger) (*changelog.Housekeeper, <-chan pass) {
	t.Helper()
	passes := make(chan pass, 100)
	h := changelog.NewHousekeeper(lg, policy, time.Millisecond, logger)
	changelog.SetPassHook(h, func(rep changelog.HousekeepReport, err error) { passes <- pass{rep, err} })
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return h, passes
}

// next returns the next pass, failing after a generous wait.
func next(t *testing.T, passes <-chan pass) pass {
	t.Helper()
	select {
	case p := <-passes:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no housekeeping pass")
		return pass{}
	}
}

func TestHousekeeperPrunesAndExpires(t *testing.T) {
	t.Parallel()
	st := openSQLite(t)
	lg, clock := newLog(t, st)
	writeN(t, lg, clock, 0, 5)
	clock.Advance(time.Hour) // every receipt is past the window
	h, passes := startHousekeeper(t, lg, changelog.Retention{MaxRows: 2}, slog.New(slog.DiscardHandler))

	p := next(t, passes)
	if p.err != nil || p.rep.Pruned["s"] != 3 || p.rep.PrunedCommits != 3 || p.rep.ReceiptsExpired != 5 {
		t.Fatalf("first pass = %+v, %v; want s pruned through 3 and 5 receipts expired", p.rep, p.err)
	}
	if p := next(t, passes); p.err != nil || len(p.rep.Pruned) != 0 || p.rep.ReceiptsExpired != 0 {
		t.Fatalf("second pass = %+v, %v; want nothing left to do", p.rep, p.err)
	}
	if err := h.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Stop waited for the loop: no pass runs after it.
	for len(passes) > 0 {
		<-passes
	}
	writeN(t, lg, clock, 5, 3)
	select {
	case p := <-passes:
		t.Fatalf("pass after Stop: %+v", p)
	case <-time.After(20 * time.Millisecond):
	}
	sp, err := lg.Space(context.Background(), "s")
	if err != nil || sp.Head != 8 || sp.Horizon != 3 {
		t.Fatalf("space after Stop = %+v, %v; want head 8, horizon 3", sp, err)
	}
}

// TestHousekeeperZeroPolicy checks that receipts expire without a
// retention policy, and nothing is pruned.
func TestHousekeeperZeroPolicy(t *testing.T) {
	t.Parallel()
	st := openSQLite(t)
	lg, clock := newLog(t, st)
	writeN(t, lg, clock, 0, 4)
	// The clock stands 4 minutes after the first write: move it so that
	// the first two receipts (at +0 and +1) are past the hour.
	clock.Advance(57*time.Minute + 30*time.Second)
	_, passes := startHousekeeper(t, lg, changelog.Retention{}, slog.New(slog.DiscardHandler))
	p := next(t, passes)
	if p.err != nil || len(p.rep.Pruned) != 0 || p.rep.ReceiptsExpired != 2 {
		t.Fatalf("pass = %+v, %v; want 2 receipts expired, nothing pruned", p.rep, p.err)
	}
	sp, err := lg.Space(context.Background(), "s")
	if err != nil || sp.Horizon != 0 {
		t.Fatalf("space = %+v, %v; want nothing pruned", sp, err)
	}
}

func TestHousekeeperLifecycle(t *testing.T) {
	t.Parallel()
	st := openSQLite(t)
	lg, _ := newLog(t, st)
	ctx := context.Background()
	never := changelog.NewHousekeeper(lg, changelog.Retention{}, 0, nil)
	if err := never.Stop(ctx); err != nil {
		t.Fatalf("stop of a never started housekeeper: %v", err)
	}
	if err := never.Start(ctx); !errors.Is(err, changelog.ErrHousekeeperStopped) {
		t.Fatalf("start after stop: %v, want ErrHousekeeperStopped", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	h := changelog.NewHousekeeper(lg, changelog.Retention{}, time.Hour, nil)
	if err := h.Start(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("start with a cancelled context: %v", err)
	}
	for i := range 2 {
		if err := h.Start(ctx); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
	}
	for i := range 2 {
		if err := h.Stop(ctx); err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
	}
}

// flakyStore fails ReceiptsExpire while fail is positive, counting down.
type flakyStore struct {
	store.Store
	fail atomic.Int32
}

func (s *flakyStore) ReceiptsExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	if s.fail.Add(-1) >= 0 {
		return 0, errors.New("disk on fire")
	}
	return s.Store.ReceiptsExpire(ctx, before, limit)
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestHousekeeperBackoff checks that failures are logged once (rate
// limited), passes go on after them, and the recovery is logged.
func TestHousekeeperBackoff(t *testing.T) {
	t.Parallel()
	st := &flakyStore{Store: openSQLite(t)}
	st.fail.Store(3)
	lg, _ := newLog(t, st)
	var logs syncBuffer
	_, passes := startHousekeeper(t, lg, changelog.Retention{}, slog.New(slog.NewTextHandler(&logs, nil)))
	for i := range 3 {
		if p := next(t, passes); p.err == nil || !strings.Contains(p.err.Error(), "disk on fire") {
			t.Fatalf("pass %d: err %v, want the store's failure", i, p.err)
		}
	}
	if p := next(t, passes); p.err != nil {
		t.Fatalf("pass after the failures: %v", p.err)
	}
	out := logs.String()
	if n := strings.Count(out, "housekeeping failed"); n != 1 {
		t.Errorf("logged %d failures, want 1 (rate limited):\n%s", n, out)
	}
	if !strings.Contains(out, "housekeeping recovered") || !strings.Contains(out, "failures=3") {
		t.Errorf("no recovery line with failures=3:\n%s", out)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		interval time.Duration
		failures int
		want     time.Duration
	}{
		{time.Minute, 0, time.Minute},
		{time.Minute, 1, 2 * time.Minute},
		{time.Minute, 3, 8 * time.Minute},
		{time.Minute, 4, changelog.HousekeepMaxBackoff},
		{time.Minute, 1000, changelog.HousekeepMaxBackoff},
		{time.Hour, 2, time.Hour}, // never below the interval
		{time.Millisecond, 2, 4 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := changelog.Backoff(tt.interval, tt.failures); got != tt.want {
			t.Errorf("backoff(%s, %d) = %s, want %s", tt.interval, tt.failures, got, tt.want)
		}
	}
}

// TestHousekeepBatches checks that a pass expires receipts in batches of
// ExpireBatch until none is left. It shrinks ExpireBatch, so it is not
// parallel.
func TestHousekeepBatches(t *testing.T) {
	old := changelog.ExpireBatch
	changelog.ExpireBatch = 2
	defer func() { changelog.ExpireBatch = old }()
	st := &countingStore{Store: openSQLite(t)}
	lg, clock := newLog(t, st)
	writeN(t, lg, clock, 0, 5)
	clock.Advance(2 * time.Hour)
	rep, err := lg.Housekeep(context.Background(), changelog.Retention{})
	if err != nil || rep.ReceiptsExpired != 5 {
		t.Fatalf("housekeep = %+v, %v; want 5 receipts expired", rep, err)
	}
	if got := st.calls.Load(); got != 3 {
		t.Fatalf("ReceiptsExpire called %d times, want 3 (2 + 2 + 1)", got)
	}
}

// countingStore counts ReceiptsExpire calls.
type countingStore struct {
	store.Store
	calls atomic.Int32
}

func (s *countingStore) ReceiptsExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	s.calls.Add(1)
	return s.Store.ReceiptsExpire(ctx, before, limit)
}
