package changelog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/sqlite"
)

// TestPullRawReadAhead: a sequential raw puller gets, page by page, the
// bytes a reader without read-ahead gets (the pages it took from the
// read-ahead included), and a prune after a page was read ahead still
// answers history_unavailable for the pruned position.
func TestPullRawReadAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lg := pullLog(t, func(st store.Store) store.Store { return st })
	encode := func(p changelog.RawPullPage) string {
		return string(p.AppendJSON(nil))
	}
	pages := 0
	for cursor, more := int64(0), true; more; pages++ {
		got, err := lg.PullRaw(ctx, "s", cursor, 4)
		if err != nil {
			t.Fatal(err)
		}
		want, err := lg.PullRawWith(ctx, "s", cursor, 4, changelog.PullOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if encode(got) != encode(want) {
			t.Fatalf("page after %d:\nread ahead %s\nread       %s", cursor, encode(got), encode(want))
		}
		cursor, more = got.NextCursor, got.HasMore
	}
	if pages != 7 {
		t.Errorf("%d pages, want 7", pages)
	}
	// Pages after 0 and 4: the one after 8 is read ahead; prune through 10.
	for _, after := range []int64{0, 4} {
		if _, err := lg.PullRaw(ctx, "s", after, 4); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lg.Prune(ctx, "s", 10); err != nil {
		t.Fatal(err)
	}
	var gone *changelog.HistoryUnavailableError
	if _, err := lg.PullRaw(ctx, "s", 8, 4); !errors.As(err, &gone) {
		t.Fatalf("after a prune through 10, the page after 8: %v, want history unavailable", err)
	}
	p, err := lg.PullRaw(ctx, "s", 10, 4)
	if err != nil || len(p.Commits) == 0 || p.Commits[0].Seq != 11 {
		t.Fatalf("the page after the horizon: %+v, %v", p, err)
	}
}

// TestSplitRaw: a page read with a large limit, cut with SplitRaw, gives
// the pages PullRaw answers one after the other with the small limit.
func TestSplitRaw(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "eddy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	lg := changelog.New(st, changelog.Options{})
	defer lg.Close()
	if _, err := lg.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		var ms []changelog.Mutation
		for j := range 1 + i%3 {
			ms = append(ms, changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: fmt.Sprint("t", i, "-", j), Properties: json.RawMessage(`{"n":1}`)})
		}
		if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Mutations: ms, Atomic: true, Provenance: store.Provenance{Actor: "owner", Via: "api"}}); err != nil {
			t.Fatal(err)
		}
	}
	sp, err := lg.Space(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	big, err := lg.PullRawWith(ctx, "s", 0, 1000, changelog.PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if big.HasMore {
		t.Fatal("the big page does not reach the head")
	}
	cursor := int64(0)
	for i, got := range changelog.SplitRaw(big.Commits, 4) {
		want, err := lg.PullRawWith(ctx, "s", cursor, 4, changelog.PullOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want.Commits) || got[0].Seq != want.Commits[0].Seq || got[len(got)-1].Seq != want.NextCursor {
			t.Fatalf("page %d after %d: split %d commits from %d, PullRaw %d to %d", i, cursor, len(got), got[0].Seq, len(want.Commits), want.NextCursor)
		}
		cursor = want.NextCursor
	}
	if cursor != sp.Head {
		t.Errorf("the split pages end at %d, the head is %d", cursor, sp.Head)
	}
}

// pullLog returns a log on a fresh SQLite store (wrapped by wrap) whose
// space "s" holds 25 single-put commits.
func pullLog(t *testing.T, wrap func(store.Store) store.Store) *changelog.Log {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "eddy.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	lg := changelog.New(wrap(st), changelog.Options{})
	t.Cleanup(func() { _ = lg.Close() })
	if _, err := lg.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		m := changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: fmt.Sprint("t", i), Properties: json.RawMessage(`{"n":1}`)}
		if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}, Provenance: store.Provenance{Actor: "owner", Via: "api"}}); err != nil {
			t.Fatal(err)
		}
	}
	return lg
}

// aheadStore counts the raw reads made for the caller (ctx marked) and
// reports the start of every other one: the reads ahead.
type aheadStore struct {
	store.Store
	direct atomic.Int64
	ahead  chan int64
}

type callerKey struct{}

func (s *aheadStore) RawCommits(ctx context.Context, p store.CommitsParams) ([]store.RawCommit, error) {
	if ctx.Value(callerKey{}) != nil {
		s.direct.Add(1)
	} else {
		s.ahead <- p.After
	}
	return s.Store.RawCommits(ctx, p)
}

// TestPullRawReadsTwoPagesAhead: once a puller is sequential, its page
// starts the reads of the two pages after it (the second where the pages
// have kept their size), the next page is taken from them, and a read
// away from the sequence starts none.
func TestPullRawReadsTwoPagesAhead(t *testing.T) {
	t.Parallel()
	ctx := context.WithValue(context.Background(), callerKey{}, true)
	var st *aheadStore
	lg := pullLog(t, func(base store.Store) store.Store {
		st = &aheadStore{Store: base, ahead: make(chan int64, 16)}
		return st
	})
	wantAhead := func(afters ...int64) {
		t.Helper()
		got := map[int64]bool{}
		for range afters {
			select {
			case a := <-st.ahead:
				got[a] = true
			case <-time.After(time.Minute):
				t.Fatalf("reads ahead started after %v, want %v", got, afters)
			}
		}
		for _, a := range afters {
			if !got[a] {
				t.Fatalf("reads ahead started after %v, want %v", got, afters)
			}
		}
	}
	pull := func(after int64, direct int64) {
		t.Helper()
		p, err := lg.PullRaw(ctx, "s", after, 4)
		if err != nil || len(p.Commits) != 4 || p.Commits[0].Seq != after+1 {
			t.Fatalf("page after %d: %d commits, %v", after, len(p.Commits), err)
		}
		if got := st.direct.Load(); got != direct {
			t.Fatalf("after the page after %d: %d direct reads, want %d", after, got, direct)
		}
	}
	pull(0, 1) // a first page: no sequence yet
	pull(4, 2)
	wantAhead(8, 12)
	pull(8, 2) // taken from the read ahead
	wantAhead(16)
	pull(12, 2)
	wantAhead(20)
	pull(5, 3) // away from the sequence: read directly, nothing ahead
	select {
	case a := <-st.ahead:
		t.Fatalf("a page away from the sequence started a read ahead after %d", a)
	default:
	}
}
