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
	return &watcher{h: h, sink: s, timer: time.NewTimer(time.Hour)}
}

func batchOf(seqs ...int64) []item {
	out := make([]item, len(seqs))
	for i, s := range seqs {
		r := store.Row{Seq: s, Op: "put", Type: "task", EntityID: "t", Payload: []byte(`{}`)}
		out[i] = item{row: r, line: appendRow(nil, &r)}
	}
	return out
}

// TestDeliverCoalesces: the batches queued behind the one received go
// out in the same write; a channel closed meanwhile is reported after
// what was consumed is written.
func TestDeliverCoalesces(t *testing.T) {
	s := &countingSink{}
	wt := testWatcher(s)
	defer wt.timer.Stop()
	ch := make(chan []item, 4)
	ch <- batchOf(2, 3)
	ch <- batchOf(4)
	open, err := wt.deliver(context.Background(), ch, batchOf(1))
	if err != nil || !open {
		t.Fatalf("deliver = %v, %v; want open, nil", open, err)
	}
	if len(s.writes) != 1 || bytes.Count(s.writes[0], []byte("\n")) != 4 || wt.pos != 4 {
		t.Fatalf("writes %q, pos %d; want one write of rows 1-4", s.writes, wt.pos)
	}
	ch <- batchOf(5)
	close(ch)
	open, err = wt.deliver(context.Background(), ch, nil)
	if err != nil || open {
		t.Fatalf("deliver after close = %v, %v; want closed, nil", open, err)
	}
	if len(s.writes) != 2 || !bytes.HasPrefix(s.writes[1], []byte(`{"seq":5,`)) || wt.pos != 5 {
		t.Fatalf("writes %q, pos %d; want row 5 written before the close is reported", s.writes, wt.pos)
	}
}

// TestDeliverCoalesceBound: coalesced writes stay within the stream's
// buffer bound (MaxBuffer, plus the line that crossed it).
func TestDeliverCoalesceBound(t *testing.T) {
	s := &countingSink{}
	wt := testWatcher(s)
	defer wt.timer.Stop()
	line := len(batchOf(1)[0].line)
	per := wt.h.opts.MaxBuffer/line + 1 // one batch over the bound
	ch := make(chan []item, 2)
	big := make([]int64, per)
	for i := range big {
		big[i] = int64(i + 1)
	}
	ch <- batchOf(int64(per+1), int64(per+2))
	if _, err := wt.deliver(context.Background(), ch, batchOf(big...)); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, w := range s.writes {
		if len(w) > wt.h.opts.MaxBuffer+line {
			t.Fatalf("a write of %d bytes, over the bound %d", len(w), wt.h.opts.MaxBuffer)
		}
		rows += bytes.Count(w, []byte("\n"))
	}
	if len(s.writes) != 2 || rows != per+2 || wt.pos != int64(per+2) || len(ch) != 0 {
		t.Fatalf("%d writes of %d rows, pos %d, %d queued; want the rows in 2 writes", len(s.writes), rows, wt.pos, len(ch))
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
