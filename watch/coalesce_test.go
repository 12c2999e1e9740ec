package watch

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/eddy-run/eddy/store"
)

// countingSink records every write.
type countingSink struct{ writes [][]byte }

func (s *countingSink) write(b []byte) error {
	s.writes = append(s.writes, bytes.Clone(b))
	return nil
}
func (s *countingSink) abort([]byte) {}
func (s *countingSink) close()       {}

func testWatcher(s sink) *watcher {
	h := &Hub{opts: Options{}.withDefaults()}
	sh := newSpaceHub(h, "s")
	return &watcher{h: h, sh: sh, sink: s, timer: time.NewTimer(time.Hour), woken: make(chan struct{}, 1)}
}

func batchOf(seqs ...int64) []item {
	out := make([]item, len(seqs))
	for i, s := range seqs {
		r := store.Row{Seq: s, Op: "put", Type: "task", EntityID: "t", Payload: []byte(`{}`)}
		out[i] = item{row: r, line: appendRow(nil, &r)}
	}
	return out
}

// queue queues batches for wt's goroutine as the fan-out does.
func queue(wt *watcher, batches ...[]item) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	for _, b := range batches {
		wt.enqueue(b)
	}
}

// TestDrainCoalesces: the batches queued for a watcher go out in one
// write; a dropped watcher reports it, at the position it wrote.
func TestDrainCoalesces(t *testing.T) {
	s := &countingSink{}
	wt := testWatcher(s)
	defer wt.timer.Stop()
	queue(wt, batchOf(1), batchOf(2, 3), batchOf(4))
	joined, err := wt.drain(context.Background(), false)
	if err != nil || !joined {
		t.Fatalf("drain = %v, %v; want joined, nil", joined, err)
	}
	if len(s.writes) != 1 || bytes.Count(s.writes[0], []byte("\n")) != 4 || wt.pos != 4 {
		t.Fatalf("writes %q, pos %d; want one write of rows 1-4", s.writes, wt.pos)
	}
	queue(wt, batchOf(5))
	wt.drop()
	joined, err = wt.drain(context.Background(), false)
	if err != nil || joined {
		t.Fatalf("drain after a drop = %v, %v; want dropped, nil", joined, err)
	}
	if len(s.writes) != 1 || wt.pos != 4 {
		t.Fatalf("writes %q, pos %d; want nothing more, catch-up from 4", s.writes, wt.pos)
	}
}

// TestDrainCoalesceBound: coalesced writes stay within the stream's
// buffer bound (MaxBuffer, plus the line that crossed it).
func TestDrainCoalesceBound(t *testing.T) {
	s := &countingSink{}
	wt := testWatcher(s)
	defer wt.timer.Stop()
	line := len(batchOf(1)[0].line)
	per := wt.h.opts.MaxBuffer/line + 1 // one batch over the bound
	big := make([]int64, per)
	for i := range big {
		big[i] = int64(i + 1)
	}
	queue(wt, batchOf(big...), batchOf(int64(per+1), int64(per+2)))
	if _, err := wt.drain(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, w := range s.writes {
		if len(w) > wt.h.opts.MaxBuffer+line {
			t.Fatalf("a write of %d bytes, over the bound %d", len(w), wt.h.opts.MaxBuffer)
		}
		rows += bytes.Count(w, []byte("\n"))
	}
	if len(s.writes) != 2 || rows != per+2 || wt.pos != int64(per+2) {
		t.Fatalf("%d writes of %d rows, pos %d; want the rows in 2 writes", len(s.writes), rows, wt.pos)
	}
}

// TestFrameFor: the fan-out sends the shared frame to a watcher taking
// every row, its own lines and a bookmark to one that rejects some, and
// leaves to the goroutine a batch with a row only its commit can judge.
func TestFrameFor(t *testing.T) {
	wt := testWatcher(&countingSink{})
	defer wt.timer.Stop()
	items := batchOf(1, 2, 3)
	items[2].row.Type = "note"
	b := &outBatch{items: items, frame: appendChunk(nil, []byte("all"))}
	var sc scratch
	if f, ok := wt.frameFor(b, &sc); !ok || string(f) != string(b.frame) || wt.pos != 3 || wt.told != 3 {
		t.Fatalf("no filter: frame %q, %v, pos %d, told %d; want the shared frame", f, ok, wt.pos, wt.told)
	}
	if f, ok := wt.frameFor(b, &sc); !ok || f != nil {
		t.Fatalf("seen batch: frame %q, %v; want nothing", f, ok)
	}
	wt.pos, wt.told = 0, 0
	wt.f.Types = []string{"task"}
	want := appendChunk(nil, appendBookmark(append(append([]byte{}, items[0].line...), items[1].line...), 3))
	if f, ok := wt.frameFor(b, &sc); !ok || string(f) != string(want) || wt.told != 3 {
		t.Fatalf("filtered: frame %q, %v; want %q", f, ok, want)
	}
	wt.pos, wt.told = 0, 0
	wt.f.NeedsCommit = func(r *store.Row) bool { return r.Seq == 2 }
	if f, ok := wt.frameFor(b, &sc); ok || f != nil || wt.pos != 0 {
		t.Fatalf("needs a commit: frame %q, %v, pos %d; want the goroutine to judge", f, ok, wt.pos)
	}
}

// TestWriteDeadlineSteps: the deadline moves on the first write and then
// only once a quarter of WriteTimeout has passed.
func TestWriteDeadlineSteps(t *testing.T) {
	var d writeDeadline
	const WriteTimeout = 30 * time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {time.Second, false}, {WriteTimeout/4 - time.Nanosecond, false}, {WriteTimeout / 4, true}, {WriteTimeout/4 + time.Second, false}} {
		dl, ok := d.next(t0.Add(tc.at), WriteTimeout)
		if ok != tc.want || (ok && !dl.Equal(t0.Add(tc.at+WriteTimeout))) {
			t.Fatalf("next at %v = %v, %v; want moved %v", tc.at, dl, ok, tc.want)
		}
	}
}
