package client_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/client"
)

// fastResume makes a test watch reconnect quickly.
func fastResume(o client.WatchOptions) client.WatchOptions {
	o.MinBackoff, o.MaxBackoff = time.Millisecond, 20*time.Millisecond
	return o
}

// A watch whose connection is cut again and again while rows are being
// written resumes every time from its position: every row it should see
// arrives exactly once, in seq order, for the whole changelog and for one
// collection (whose stream skips the other type's rows with progress
// bookmarks).
func TestWatchResumesAcrossDisconnects(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		const n = 60 // tasks and notes each: seqs 1..2n, tasks odd
		cases := []struct {
			name string
			o    client.WatchOptions
			want func(seq int64) bool
		}{
			{"changes", client.WatchOptions{From: 0}, func(int64) bool { return true }},
			{"collection", client.WatchOptions{From: 0, Type: "task"}, func(seq int64) bool { return seq%2 == 1 }},
			{"filtered", client.WatchOptions{From: 0, Filter: client.Filter{Types: []string{"note"}}}, func(seq int64) bool { return seq%2 == 0 }},
		}
		type result struct {
			name  string
			got   []int64
			drops int64
			err   error
		}
		results := make(chan result, len(cases))
		var started sync.WaitGroup
		for _, tc := range cases {
			cut := newCutter(t)
			var drops atomic.Int64
			o := fastResume(tc.o)
			o.OnDrop = func(client.Drop) { drops.Add(1) }
			w := must(e.client(e.Admin, cut.hc).Space("default").Watch(c, o))
			t.Cleanup(func() { _ = w.Close() })
			want := 0
			for seq := int64(1); seq <= 2*n; seq++ {
				if tc.want(seq) {
					want++
				}
			}
			started.Add(1)
			go func() {
				r := result{name: tc.name}
				defer func() { r.drops = drops.Load(); results <- r }()
				started.Done()
				for len(r.got) < want {
					ev, err := w.Next()
					if err != nil {
						r.err = err
						return
					}
					if ev.Kind == client.EventRow {
						r.got = append(r.got, ev.Row.Seq)
						if len(r.got)%10 == 0 {
							cut.cut()
						}
					}
				}
			}()
		}
		started.Wait()
		for i := range n {
			must(e.sp.Put(c, "task", fmt.Sprint("t", i), map[string]any{"i": i}))
			must(e.sp.Put(c, "note", fmt.Sprint("n", i), map[string]any{"i": i}))
		}
		for range cases {
			r := <-results
			tc := cases[0]
			for _, x := range cases {
				if x.name == r.name {
					tc = x
				}
			}
			if r.err != nil {
				t.Fatalf("%s: %v", r.name, r.err)
			}
			var want []int64
			for seq := int64(1); seq <= 2*n; seq++ {
				if tc.want(seq) {
					want = append(want, seq)
				}
			}
			if fmt.Sprint(r.got) != fmt.Sprint(want) {
				t.Errorf("%s: rows %v, want %v", r.name, r.got, want)
			}
			if r.drops < 3 {
				t.Errorf("%s: %d drops, want at least 3", r.name, r.drops)
			}
		}
	})
}

// A watch outlives a restart of eddy: the stopping server ends the
// stream with the terminal unavailable frame, reconnections are refused
// (503) while it is down, and the watch resumes from its position on the
// new process.
func TestWatchResumesAfterRestart(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		drops := make(chan client.Drop, 100)
		o := fastResume(client.WatchOptions{From: 0})
		o.OnDrop = func(d client.Drop) { drops <- d }
		w := must(e.sp.Watch(c, o))
		defer w.Close()
		rows := func(k int) []int64 {
			var got []int64
			for len(got) < k {
				ev := must(w.Next())
				if ev.Kind == client.EventRow {
					got = append(got, ev.Row.Seq)
				}
			}
			return got
		}
		for i := range 3 {
			must(e.sp.Put(c, "task", fmt.Sprint(i), map[string]any{}))
		}
		if got := rows(3); fmt.Sprint(got) != "[1 2 3]" {
			t.Fatalf("before the restart: %v", got)
		}
		e.Stop()
		e.Start()
		for i := 3; i < 6; i++ {
			must(e.sp.Put(c, "task", fmt.Sprint(i), map[string]any{}))
		}
		if got := rows(3); fmt.Sprint(got) != "[4 5 6]" {
			t.Fatalf("after the restart: %v", got)
		}
		d := <-drops
		if client.CodeOf(d.Err) != "unavailable" || d.From != 3 {
			t.Fatalf("first drop = %+v", d)
		}
	})
}

// A watch that falls below the horizon while disconnected ends with a
// *CompactedError naming where it was and where history starts; opening
// one there fails at once; re-listing and watching from the list's head
// continues.
func TestWatchCompacted(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		for i := range 5 {
			must(e.sp.Put(c, "task", fmt.Sprint(i), map[string]any{}))
		}
		cut := newCutter(t)
		w := must(e.client(e.Admin, cut.hc).Space("default").Watch(c, fastResume(client.WatchOptions{From: 0})))
		defer w.Close()
		for w.Position() < 5 {
			must(w.Next())
		}
		cut.setRefuse(true)
		cut.cut()
		must(e.sp.Put(c, "task", "5", map[string]any{}))
		must(e.sp.Put(c, "task", "6", map[string]any{}))
		must(e.sp.Prune(c, client.PruneParams{Through: 7}))
		cut.setRefuse(false)

		_, err := w.Next()
		var ce *client.CompactedError
		if !errors.As(err, &ce) || ce.From != 5 || ce.Horizon != 7 || !client.IsCode(err, "compacted") {
			t.Fatalf("next = %v, want compacted from 5, horizon 7", err)
		}
		if _, again := w.Next(); !errors.Is(again, err) {
			t.Fatalf("next after the final error = %v", again)
		}
		_, err = e.sp.Watch(c, client.WatchOptions{From: 2})
		if !errors.As(err, &ce) || ce.From != 2 || ce.Horizon != 7 {
			t.Fatalf("watch below the horizon = %v", err)
		}

		// The answer to compacted: re-list, then watch from the head.
		var head int64
		n := 0
		for page, err := range e.sp.ListPages(c, "task", 3) {
			if err != nil {
				t.Fatal(err)
			}
			head, n = page.Head, n+len(page.Items)
		}
		if n != 7 || head != 7 {
			t.Fatalf("re-list: %d items at head %d", n, head)
		}
		w2 := must(e.sp.Watch(c, client.WatchOptions{From: head, Type: "task"}))
		defer w2.Close()
		must(e.sp.Put(c, "task", "7", map[string]any{}))
		for {
			ev := must(w2.Next())
			if ev.Kind == client.EventRow {
				if ev.Row.Seq != 8 || ev.Row.EntityID != "7" {
					t.Fatalf("after re-listing: %+v", ev.Row)
				}
				break
			}
		}
	})
}

// The first event of a watch from the head is the opening bookmark: the
// head, to save as the position.
func TestWatchFromHead(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		c := ctx(t)
		must(e.sp.Put(c, "task", "a", map[string]any{}))
		w := must(e.sp.Watch(c, client.WatchOptions{From: client.FromHead}))
		defer w.Close()
		if w.Position() != client.FromHead {
			t.Fatalf("position before the first frame = %d", w.Position())
		}
		ev := must(w.Next())
		if ev.Kind != client.EventBookmark || ev.Position != 1 || w.Position() != 1 {
			t.Fatalf("first event = %+v", ev)
		}
		_, err := e.sp.Watch(c, client.WatchOptions{From: 9})
		wantCode(t, err, "bad_request")
		_, err = e.sp.Watch(c, client.WatchOptions{Filter: client.Filter{When: "row.op =="}})
		wantCode(t, err, "bad_request")
	})
}
