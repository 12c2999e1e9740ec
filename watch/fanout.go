package watch

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eddy-run/eddy/changelog"
)

// How a batch reaches a caught-up watcher: while the watcher's goroutine
// is idle and its stream is a taken-over connection with a descriptor,
// the space hub judges the rows for it and writes them itself, without
// waiting (one write per watcher per batch, no write deadline, no
// goroutine woken: at 10,000 watchers the write is what remains).
// Otherwise the batch is queued and the watcher's goroutine wakes to
// send it under the write timeout; it does so too for what a direct
// write left unsent (the client reads slowly), for rows only their
// commit can judge, and for a when whose budget runs out. A watcher
// whose queue holds more than TailSize rows is dropped to catch-up reads.

// fanChunk is the fewest watchers worth a fan-out worker of their own,
// and how many a worker takes at a time (spaceHub.offer).
const fanChunk = 256

// scratch is a fan-out worker's buffers.
type scratch struct {
	sel     []bool     // the rows of the batch the watcher's filter selects
	body    []byte     // its lines
	frame   []byte     // its chunk
	dropped []*watcher // the watchers this batch dropped
}

// outBatch is one batch as the fan-out offers it.
type outBatch struct {
	items []item
	frame []byte    // every line as one chunk: the frame of a watcher that takes all
	now   time.Time // when the fan-out began
}

// fanOut offers batch to every watcher in sh.snap, split among up to
// GOMAXPROCS workers, and returns when all are done, with the watchers it
// dropped unregistered.
func (sh *spaceHub) fanOut(batch []item) {
	k := sh.offer(batch)
	for i := range sh.scratch[:k] {
		sh.forget(sh.scratch[i].dropped)
		clear(sh.scratch[i].dropped)
		sh.scratch[i].dropped = sh.scratch[i].dropped[:0]
	}
}

// offer offers batch to every watcher in sh.snap and returns the number
// of workers (and scratches) it used. The workers take the watchers
// fanChunk at a time from one counter rather than a fixed share each: a
// worker the scheduler holds back (the clients share the processors)
// leaves the rest of its share to the others, and the last watcher is
// written to as soon as the workers together can.
func (sh *spaceHub) offer(batch []item) int {
	n := len(sh.snap)
	if n == 0 {
		return 0
	}
	k := min(runtime.GOMAXPROCS(0), (n+fanChunk-1)/fanChunk)
	if len(sh.scratch) < k {
		sh.scratch = make([]scratch, k)
	}
	b := &outBatch{items: batch, now: time.Now()}
	body := sh.scratch[0].body[:0]
	for i := range batch {
		body = append(body, batch[i].line...)
	}
	b.frame = appendChunk(nil, body)
	sh.scratch[0].body = body
	if k == 1 {
		offerAll(sh.snap, b, &sh.scratch[0])
		return 1
	}
	var next atomic.Int64
	work := func(sc *scratch) {
		for {
			hi := int(next.Add(fanChunk))
			if hi-fanChunk >= n {
				return
			}
			offerAll(sh.snap[hi-fanChunk:min(hi, n)], b, sc)
		}
	}
	var wg sync.WaitGroup
	for i := 1; i < k; i++ {
		sc := &sh.scratch[i]
		wg.Go(func() { work(sc) })
	}
	work(&sh.scratch[0])
	wg.Wait()
	return k
}

// forget unregisters the watchers in ws that are still dropped, so that
// an idle hub stops reading while their goroutines are busy (a dropped
// watcher blocked on a client that does not read); each one's goroutine
// leaves and catches up by itself.
func (sh *spaceHub) forget(ws []*watcher) {
	if len(ws) == 0 {
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, w := range ws {
		w.mu.Lock()
		if w.dropped {
			delete(sh.watchers, w)
		}
		w.mu.Unlock()
	}
}

func offerAll(ws []*watcher, b *outBatch, sc *scratch) {
	for _, w := range ws {
		w.offer(b, sc)
	}
}

// offer writes b to the client at once when it can, or queues it for
// the watcher's goroutine.
func (wt *watcher) offer(b *outBatch, sc *scratch) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.dropped {
		return
	}
	if wt.direct {
		frame, ok := wt.frameFor(b, sc)
		if !ok {
			wt.direct = false
			wt.queueOn(b.items, sc)
			return
		}
		if frame == nil {
			return
		}
		if wt.conn.writeNow(frame) {
			wt.wrote = b.now
			return
		}
		wt.direct, wt.short = false, true
		wt.signal()
		return
	}
	wt.queueOn(b.items, sc)
}

// queueOn queues items, noting in sc a watcher it drops. Called with
// wt.mu held.
func (wt *watcher) queueOn(items []item, sc *scratch) {
	if !wt.enqueue(items) {
		sc.dropped = append(sc.dropped, wt)
	}
}

// frameFor judges b's rows for a direct write and returns the chunk to
// send: b.frame when the watcher takes every row, else its own lines
// (and a bookmark for rows consumed unsent) in sc; nil when it has seen
// every row. False, with nothing consumed, when the goroutine must judge
// the batch: a row needs its commit read, the when budget ran out, or
// the frame is over MaxBuffer. Called with wt.mu held and wt.direct set.
func (wt *watcher) frameFor(b *outBatch, sc *scratch) ([]byte, bool) {
	last := b.items[len(b.items)-1].row.Seq
	if last <= wt.pos {
		return nil, true
	}
	if len(b.frame) > wt.h.opts.MaxBuffer {
		return nil, false
	}
	wt.resetBudget(wt.ctx)
	sc.sel = sc.sel[:0]
	every := true
	for i := range b.items {
		r := &b.items[i].row
		v := changelog.Rejected
		if r.Seq > wt.pos {
			v = wt.f.Judge(r)
		}
		if v == changelog.AskCommit {
			return nil, false
		}
		sc.sel = append(sc.sel, v == changelog.Selected)
		every = every && v == changelog.Selected
	}
	if wt.budgetErr() != nil {
		return nil, false
	}
	wt.pos = last
	if every {
		wt.told = last
		return b.frame, true
	}
	body := sc.body[:0]
	for i, ok := range sc.sel {
		if ok {
			body = append(body, b.items[i].line...)
			wt.told = b.items[i].row.Seq
		}
	}
	if wt.pos > wt.told {
		body = appendBookmark(body, wt.pos)
		wt.told = wt.pos
	}
	sc.body = body
	sc.frame = appendChunk(sc.frame[:0], body)
	return sc.frame, true
}

// enqueue queues items for the watcher's goroutine, or drops the
// watcher (false) when its queue would hold more than TailSize rows.
// Called with wt.mu held.
func (wt *watcher) enqueue(items []item) bool {
	defer wt.signal()
	if wt.queued += len(items); wt.queued > wt.h.opts.TailSize {
		wt.queue, wt.queued, wt.dropped = nil, 0, true
		wt.sh.drops.Add(1)
		return false
	}
	wt.queue = append(wt.queue, items)
	return true
}

// signal wakes the watcher's goroutine without blocking.
func (wt *watcher) signal() {
	select {
	case wt.woken <- struct{}{}:
	default:
	}
}

// drop tells the watcher it left the fan-out and must catch up by itself.
func (wt *watcher) drop() {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	wt.queue, wt.queued, wt.dropped = nil, 0, true
	wt.signal()
}

// joined resets the watcher's fan-out state as it joins, with pending
// (the tail rows it has not seen) queued; they do not count against the
// queue's bound, which is for the rows the fan-out adds. Called with the
// space hub's lock held.
func (wt *watcher) joined(pending []item) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	wt.queue, wt.queued, wt.dropped, wt.direct = nil, 0, false, false
	if len(pending) > 0 {
		wt.queue = append(wt.queue, pending)
		wt.signal()
		return
	}
	wt.direct = wt.conn != nil
}

// claim takes the stream back from the fan-out, which writes to it no
// more until release, and returns the batches queued and whether the
// watcher was dropped.
func (wt *watcher) claim() ([][]item, bool) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	wt.direct = false
	q, dropped := wt.queue, wt.dropped
	wt.queue, wt.queued = nil, 0
	return q, dropped
}

// release hands the stream to the fan-out again (direct writes, when the
// connection allows them); false when batches were queued meanwhile.
func (wt *watcher) release() bool {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if len(wt.queue) > 0 || wt.dropped {
		return false
	}
	if wt.conn != nil {
		wt.conn.idle()
		wt.direct = true
	}
	return true
}
