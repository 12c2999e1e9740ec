package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// TestCatchUpPages: a trigger catching up over many pages commits
// several pages in one transaction, yet judges, coalesces and records
// errors page by page, as it does committing each page alone: with
// Batch 3, 60 patches of one entity (more than one read of catchUpPages
// pages) leave one coalesced delivery per page of 3, every row matches
// the plain trigger once, and every row whose `when` fails records its
// error.
func TestCatchUpPages(t *testing.T) {
	t.Parallel()
	opts := testOptions()
	opts.Batch = 3
	e := newEnv(t, openSQLite(t), opts)
	e.noop()
	const rows = 60
	e.write(put("task", "t", map[string]any{"n": 0}))
	for i := 1; i < rows; i++ {
		e.write(patch("task", "t", map[string]any{"n": i}))
	}
	// coal catches up alone, so its pages start at row 1.
	e.trigger("coal", `{"source":{"changes":{"types":["task"]}},"function":"noop","coalesce":true,"start":"beginning"}`)
	e.settle("coal")
	e.trigger("plain", `{"source":{"changes":{"types":["task"],"when":"int(entity.properties.n) % 2 == 0"}},"function":"noop","start":"beginning"}`)
	e.trigger("erring", `{"source":{"changes":{"types":["task"],"when":"entity.properties.n % 2 == 0"}},"function":"noop","start":"beginning"}`)
	e.settle("coal", "plain", "erring")
	if got, want := len(e.deliveries("coal")), (rows+2)/3; got != want {
		t.Errorf("coal: %d deliveries, want %d (one per page of 3)", got, want)
	}
	seen := map[int64]int{}
	for _, d := range e.deliveries("plain") {
		seen[d.Seq]++
	}
	for seq := int64(1); seq <= rows; seq++ {
		want := 0
		if (seq-1)%2 == 0 {
			want = 1
		}
		if seen[seq] != want {
			t.Errorf("plain: %d deliveries of row %d, want %d", seen[seq], seq, want)
		}
		st := e.stances(seq)
		if st["erring"].Stance != triggers.StanceError || st["erring"].Error == "" {
			t.Errorf("erring on row %d: %+v, want a recorded error", seq, st["erring"])
		}
	}
	for _, name := range []string{"coal", "plain", "erring"} {
		if s := e.status(name); s.Cursor != rows {
			t.Errorf("%s: cursor %d, want %d", name, s.Cursor, rows)
		}
	}
}

// TestCatchUpReadsWatchedTypes: a trigger that names types catches up
// reading the changes of those types' rows only (store.CommitsParams
// ChangesOf), and judges, cuts and coalesces exactly as a trigger that
// names none (so the evaluator reads every row whole) and filters by type
// in `when`: the same deliveries, row for row, over tasks among notes
// and two-change merges with batches of 3 changes.
func TestCatchUpReadsWatchedTypes(t *testing.T) {
	t.Parallel()
	bothDrivers(t, func(t *testing.T, open opener) {
		opts := testOptions()
		opts.Batch = 3
		e := newEnv(t, open(t), opts)
		e.noop()
		for i := range 40 {
			e.write(put("task", "t", map[string]any{"n": i}))
			if i%4 == 0 {
				a, b := fmt.Sprint("a", i), fmt.Sprint("b", i)
				e.write(put("note", a, map[string]any{"n": i}), put("note", b, map[string]any{"m": i}))
				e.write(changelog.Mutation{Op: changelog.OpMerge, Type: "note", EntityID: a, From: &store.EntityKey{Type: "note", ID: b}})
			}
			if i%5 == 0 {
				e.write(put("note", fmt.Sprint("x", i), map[string]any{"n": i}))
			}
		}
		delivered := func(name, source string) []int64 {
			e.trigger(name, `{"source":{"changes":`+source+`},"function":"noop","coalesce":true,"start":"beginning"}`)
			e.settle(name)
			var seqs []int64
			for _, d := range e.deliveries(name) {
				seqs = append(seqs, d.Seq)
			}
			slices.Sort(seqs)
			if err := e.defs.DeleteTrigger(t.Context(), space, name); err != nil {
				t.Fatal(err)
			}
			return seqs
		}
		narrow := delivered("narrow", `{"types":["task"],"when":"int(entity.properties.n) % 2 == 0"}`)
		wide := delivered("wide", `{"when":"row.type == 'task' && int(entity.properties.n) % 2 == 0"}`)
		if len(narrow) < 10 || !slices.Equal(narrow, wide) {
			t.Fatalf("deliveries of rows\nnarrow %v\nwide   %v", narrow, wide)
		}
	})
}

// TestCatchUpReadsTwoPagesAhead: a trigger catching up reads the two
// pages after the one it judges at once (the second where the page
// before it was whole), and the deliveries are those of reading page by
// page. The store holds every catch-up read past the first until both
// pages ahead have been asked for, so a catch-up reading one page ahead
// never gets there.
func TestCatchUpReadsTwoPagesAhead(t *testing.T) {
	t.Parallel()
	bothDrivers(t, func(t *testing.T, open opener) {
		opts := testOptions()
		opts.Batch = 4
		page := opts.Batch * engine.CatchUpPages
		st := &gatedReads{Store: open(t), limit: page + 1, started: make(chan int64, 64), gate: make(chan struct{})}
		e := newEnv(t, st, opts)
		e.noop()
		rows := 4*page + 5
		for i := range rows {
			e.write(put("task", fmt.Sprint("t", i), map[string]any{"n": i}))
		}
		e.trigger("sparse", `{"source":{"changes":{"types":["task"],"when":"int(entity.properties.n) % 50 == 0"}},"function":"noop","start":"beginning"}`)
		want := []int64{int64(page), int64(2 * page)}
		var got []int64
		timeout := time.After(20 * time.Second)
		for len(got) < len(want) {
			select {
			case after := <-st.started:
				got = append(got, after)
			case <-timeout:
				t.Fatalf("catch-up reads in flight after the first page: %v, want %v at once", got, want)
			}
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Fatalf("catch-up reads after the first page: %v, want %v", got, want)
		}
		close(st.gate)
		e.settle("sparse")
		var seqs []int64
		for _, d := range e.deliveries("sparse") {
			seqs = append(seqs, d.Seq)
		}
		slices.Sort(seqs)
		var wantSeqs []int64
		for i := 0; i < rows; i += 50 {
			wantSeqs = append(wantSeqs, int64(i+1))
		}
		if !slices.Equal(seqs, wantSeqs) {
			t.Fatalf("deliveries of rows %v, want %v", seqs, wantSeqs)
		}
	})
}

// gatedReads holds the evaluator's catch-up reads (RawCommits of limit
// rows without receipts: a page's commits and one more, to learn whether
// more follow) past the first page until gate is closed, reporting where
// each starts on started.
type gatedReads struct {
	store.Store
	limit   int
	started chan int64
	gate    chan struct{}
}

func (s *gatedReads) RawCommits(ctx context.Context, p store.CommitsParams) ([]store.RawCommit, error) {
	if p.Limit == s.limit && p.NoReceipts && p.After > 0 {
		select {
		case <-s.gate:
		default:
			s.started <- p.After
			select {
			case <-s.gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return s.Store.RawCommits(ctx, p)
}

// TestCatchUpDeliversRowsAsWritten: a trigger catching up over many
// pages hands every page back to the store once judged (PostgreSQL
// reuses their memory for the next pages), yet each matched row reaches
// its function as it was written: what the dispatcher holds outlives
// the pages it was read from.
func TestCatchUpDeliversRowsAsWritten(t *testing.T) {
	t.Parallel()
	bothDrivers(t, func(t *testing.T, open opener) {
		opts := testOptions()
		opts.Batch = 4
		e := newEnv(t, open(t), opts)
		rows := 6 * opts.Batch * engine.CatchUpPages
		for i := range rows {
			e.write(put("task", fmt.Sprint("t", i), map[string]any{"n": i}))
		}
		type delivered struct {
			seq  int64
			row  string
			snap string
		}
		got := make(chan delivered, 4*rows)
		e.handler("record", func(_ context.Context, in functions.Input) ([]changelog.Mutation, error) {
			d := delivered{in.Row.Seq, fmt.Sprintf("%s %s %s/%s %s", in.Row.Actor, in.Row.Op, in.Row.Type, in.Row.EntityID, in.Row.Payload),
				fmt.Sprintf("%s %s", in.Entity.ID, in.Entity.Properties)}
			select {
			case got <- d:
			default: // only once the test has stopped reading
			}
			return nil, nil
		})
		e.trigger("all", `{"source":{"changes":{"types":["task"]}},"function":"record","start":"beginning"}`)
		timeout := time.After(60 * time.Second)
		seen := map[int64]bool{}
		for len(seen) < rows {
			select {
			case d := <-got:
				i := d.seq - 1
				wantRow := fmt.Sprintf(`owner put task/t%d {"created":true,"properties":["n"]}`, i)
				// A function may be called more than once for a delivery
				// (its effects, none here, commit once with its completion):
				// every call must see the row as written.
				if wantSnap := fmt.Sprintf(`t%d {"n":%d}`, i, i); d.row != wantRow || d.snap != wantSnap {
					t.Fatalf("row %d delivered as %q, %q, want %q, %q", d.seq, d.row, d.snap, wantRow, wantSnap)
				}
				seen[d.seq] = true
			case <-timeout:
				t.Fatalf("rows delivered: %d of %d", len(seen), rows)
			}
		}
	})
}
