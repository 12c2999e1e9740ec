// Package readahead holds the pages a sequential reader will ask for
// next, each read in the background while the reader handles the page
// before it.
//
// A reader that pages through a log asks for the next page only once it
// has handled the current one, so the store sits idle while the reader
// works and the reader waits while the store reads. A Queue keeps the
// reads started for the positions the reader will ask for next, in that
// order: the reader takes the read of the position it reaches, and
// fills the queue again with the positions after it. Reads already under
// way at the right places are kept, so a reader that asks for what it
// was expected to ask for never reads a page twice.
package readahead

// Read is one page read in the background: its key, then, once done,
// its value or error.
type Read[K, V any] struct {
	// Key is what the read was started for.
	Key  K
	done chan struct{}
	val  V
	err  error
}

// Wait blocks until the read is done and returns its result.
func (r *Read[K, V]) Wait() (V, error) {
	<-r.done
	return r.val, r.err
}

// Queue is one reader's reads ahead, in the order it will ask for them.
// The zero Queue is not usable: make one with New. A Queue is not safe
// for concurrent use; its owner guards it with its own lock. The reads
// themselves run on their own goroutines.
type Queue[K, V any] struct {
	reads []*Read[K, V]
	same  func(a, b K) bool
}

// New returns an empty queue whose keys are matched with same.
func New[K, V any](same func(a, b K) bool) *Queue[K, V] {
	return &Queue[K, V]{same: same}
}

// Take returns the read started for key, dropping it and the reads
// queued before it (the reader has passed them), or nil, leaving the
// queue as it was, when no read matches.
func (q *Queue[K, V]) Take(key K) *Read[K, V] {
	for i, r := range q.reads {
		if q.same(r.Key, key) {
			q.reads = q.reads[i+1:]
			return r
		}
	}
	return nil
}

// Fill makes the queue hold a read for each of keys, in order. The
// reads already queued for a prefix of keys are kept; from the first
// place where the queue differs, what was queued is dropped (a dropped
// read still runs to its end, and its result is discarded) and read is
// started for each remaining key through spawn, which runs a function on
// a goroutine of the caller's choice (for one it waits for on close).
func (q *Queue[K, V]) Fill(keys []K, read func(K) (V, error), spawn func(func())) {
	i := 0
	for i < len(keys) && i < len(q.reads) && q.same(q.reads[i].Key, keys[i]) {
		i++
	}
	q.reads = q.reads[:i]
	for _, k := range keys[i:] {
		r := &Read[K, V]{Key: k, done: make(chan struct{})}
		q.reads = append(q.reads, r)
		spawn(func() {
			defer close(r.done)
			r.val, r.err = read(k)
		})
	}
}

// Clear drops every read queued (each still runs to its end).
func (q *Queue[K, V]) Clear() { q.reads = nil }
