package watch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// item is one row as the space hub shares it: the row, for filters, and
// its encoded line, so a row is encoded once per process, not once per
// watcher.
type item struct {
	row  store.Row
	line []byte
}

// spaceHub is the fan-out of one space: an in-memory tail of the rows
// read most recently, and the caught-up watchers fed from it.
//
// The tail holds consecutive rows tailLo+1 … last. A watcher at position
// pos may join when tailLo <= pos: it first gets the tail rows after pos,
// then every batch the hub reads. A watcher ahead of last (it read the
// store after the hub did) joins too and skips the rows it has seen.
type spaceHub struct {
	h     *Hub
	space string
	wake  chan struct{} // capacity 1: a pending wake-up
	seen  atomic.Int64  // last as of the latest read; lets Notify skip stale heads
	drops atomic.Int64  // watchers dropped for a full queue (tests read it)

	// Only run's goroutine uses these.
	snap    []*watcher // the caught-up watchers a batch goes to
	scratch []scratch  // one per fan-out worker

	mu       sync.Mutex
	valid    bool                  // tail and last are meaningful; guarded by mu
	last     int64                 // last seq read; guarded by mu
	tailLo   int64                 // the tail starts after this seq; guarded by mu
	tail     []item                // guarded by mu
	watchers map[*watcher]struct{} // caught-up watchers; guarded by mu
}

func newSpaceHub(h *Hub, space string) *spaceHub {
	return &spaceHub{h: h, space: space, wake: make(chan struct{}, 1), watchers: make(map[*watcher]struct{})}
}

// poke wakes the hub's loop without blocking.
func (sh *spaceHub) poke() {
	select {
	case sh.wake <- struct{}{}:
	default:
	}
}

// run reads and fans out new rows after every wake-up until ctx ends.
func (sh *spaceHub) run(ctx context.Context) {
	defer sh.h.loops.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sh.wake:
		}
		sh.pull(ctx)
	}
}

// pull reads every row after last, once for all watchers, and fans it out.
// With no watchers it drops its state instead: nobody needs the rows.
func (sh *spaceHub) pull(ctx context.Context) {
	for {
		from, ok := sh.readFrom()
		if !ok {
			return
		}
		page, err := sh.h.log.Read(ctx, sh.space, from, changelog.Filter{}, sh.h.opts.ReadBatch)
		if err == nil {
			err = checkContiguous(page.Rows, from, page.Cursor)
		}
		if err != nil {
			if ctx.Err() == nil {
				sh.h.opts.Logger.Warn("watch: shared read failed; watchers fall back to their own reads", "space", sh.space, "err", err)
				sh.reset()
			}
			return
		}
		items := make([]item, len(page.Rows))
		for i := range page.Rows {
			items[i] = item{row: page.Rows[i], line: appendRow(nil, &page.Rows[i])}
		}
		sh.publish(from, page.Cursor, items)
		if page.Cursor >= page.Head {
			return
		}
	}
}

// readFrom returns the position to read after, or false when the hub has
// no watchers (its state is dropped then).
func (sh *spaceHub) readFrom() (int64, bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.valid || len(sh.watchers) == 0 {
		sh.valid, sh.tail = false, nil
		return 0, false
	}
	return sh.last, true
}

// checkContiguous verifies that an unfiltered read returned every seq
// from+1 … through, in order.
func checkContiguous(rows []store.Row, from, through int64) error {
	for i := range rows {
		if want := from + 1 + int64(i); rows[i].Seq != want {
			return fmt.Errorf("shared read after %d: got seq %d, want %d", from, rows[i].Seq, want)
		}
	}
	if got := from + int64(len(rows)); got != through {
		return fmt.Errorf("shared read after %d: rows end at %d, cursor at %d", from, got, through)
	}
	return nil
}

// publish appends rows from+1 … through to the tail and offers them to
// every caught-up watcher, outside the hub's lock and spread over the
// processors: fanOut.
func (sh *spaceHub) publish(from, through int64, items []item) {
	sh.mu.Lock()
	if !sh.valid || sh.last != from {
		sh.mu.Unlock()
		return
	}
	sh.last = through
	sh.seen.Store(through)
	if len(items) == 0 {
		sh.mu.Unlock()
		return
	}
	start := len(sh.tail)
	sh.tail = append(sh.tail, items...)
	batch := sh.tail[start:len(sh.tail):len(sh.tail)]
	sh.trim()
	sh.snap = sh.snap[:0]
	for w := range sh.watchers {
		sh.snap = append(sh.snap, w)
	}
	sh.mu.Unlock()
	sh.fanOut(batch)
	clear(sh.snap) // let ended watchers go
}

// trim keeps the tail between TailSize and twice that, copying it to a
// fresh array when it drops rows (batches in flight keep the old one).
func (sh *spaceHub) trim() {
	size := sh.h.opts.TailSize
	if len(sh.tail) <= 2*size {
		return
	}
	drop := len(sh.tail) - size
	fresh := make([]item, size, 2*size)
	copy(fresh, sh.tail[drop:])
	sh.tail = fresh
	sh.tailLo += int64(drop)
}

// reset drops the hub's state and every caught-up watcher: each falls
// back to reading the store itself.
func (sh *spaceHub) reset() {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.valid, sh.tail = false, nil
	for w := range sh.watchers {
		delete(sh.watchers, w)
		w.drop()
	}
}

// join registers w, which has consumed everything up to pos, as caught up,
// with the tail rows after pos queued for it; false when the tail does
// not reach back to pos. caughtUp says pos was the store's head a moment
// ago; only such a watcher may restart an idle hub.
func (sh *spaceHub) join(w *watcher, pos int64, caughtUp bool) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !sh.valid {
		if !caughtUp {
			return false
		}
		sh.valid, sh.last, sh.tailLo, sh.tail = true, pos, pos, nil
		sh.seen.Store(pos)
	} else if pos < sh.tailLo {
		return false
	}
	var pending []item
	if pos < sh.last {
		i := int(pos - sh.tailLo)
		pending = sh.tail[i:len(sh.tail):len(sh.tail)]
	}
	w.joined(pending)
	sh.watchers[w] = struct{}{}
	sh.poke() // rows may have committed since the hub last read
	return true
}

// leave unregisters w if it is still caught up, and takes its stream
// back from the fan-out.
func (sh *spaceHub) leave(w *watcher) {
	sh.mu.Lock()
	delete(sh.watchers, w)
	sh.mu.Unlock()
	w.claim()
}
