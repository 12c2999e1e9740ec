package changelog_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// staleSpaces answers SpaceGet with the space as it was when stale was
// set, once, as a read racing a prune sees it; it counts the calls.
type staleSpaces struct {
	store.Store
	stale atomic.Pointer[store.Space]
	gets  atomic.Int64
}

func (s *staleSpaces) SpaceGet(ctx context.Context, id string) (store.Space, error) {
	s.gets.Add(1)
	if sp := s.stale.Swap(nil); sp != nil {
		return *sp, nil
	}
	return s.Store.SpaceGet(ctx, id)
}

// A page that holds commit from+1 proves no prune took any of it, so Read
// asks for the space once; a page that does not (a prune ran between the
// space read and the rows read) is checked against the horizon and
// refused.
func TestReadRacingPrune(t *testing.T) {
	t.Parallel()
	real := openSQLite(t)
	writer, clock := newLog(t, real)
	writeN(t, writer, clock, 1, 8)
	st := &staleSpaces{Store: real}
	lg := changelog.New(st, changelog.Options{})
	t.Cleanup(func() { _ = lg.Close() })
	ctx := context.Background()

	page, err := lg.Read(ctx, "s", 2, changelog.Filter{}, 3)
	if err != nil || len(page.Rows) != 3 || page.Rows[0].Seq != 3 {
		t.Fatalf("read from 2 = %+v, %v; want rows 3..5", page, err)
	}
	if n := st.gets.Swap(0); n != 1 {
		t.Fatalf("a whole page read the space %d times, want 1", n)
	}

	before, err := real.SpaceGet(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	st.stale.Store(&before)
	if _, err := writer.Prune(ctx, "s", 5); err != nil {
		t.Fatal(err)
	}
	_, err = lg.Read(ctx, "s", 2, changelog.Filter{}, 3)
	var gone *changelog.HistoryUnavailableError
	if !errors.As(err, &gone) || gone.Horizon != 5 {
		t.Fatalf("read from 2 racing a prune through 5 = %v, want history unavailable at horizon 5", err)
	}
}
