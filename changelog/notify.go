package changelog

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/eddy-run/eddy/store"
)

// subscribeBackoffMax bounds the delay between restarts of a failed
// store.Notifier Listen.
var subscribeBackoffMax = 30 * time.Second

// notifications fans the store's commit notifications out to the
// subscribers of Subscribe through one listener.
type notifications struct {
	mu     sync.Mutex
	subs   map[uint64]func(space string, head int64) // guarded by mu
	next   uint64                                    // guarded by mu
	cancel context.CancelFunc                        // ends the running listener; guarded by mu
	done   chan struct{}                             // closed when the running listener returned; guarded by mu
}

// Subscribe calls fn with a space and its new head for every commit
// notification of the store, until cancel is called: when the store is
// a store.Notifier (PostgreSQL), the commits of every process sharing
// it, this one's included, and space "" with head -1 after the
// listener (re)connects, when every space must re-check its head. A
// store that is not a Notifier sends none (this process's commits
// reach Options.OnCommit either way). fn must not block.
//
// The first subscription starts one listener (one connection) that
// every subscriber shares; canceling the last stops it and returns when
// it has stopped. cancel is idempotent.
func (l *Log) Subscribe(fn func(space string, head int64)) (cancel func()) {
	n, ok := l.st.(store.Notifier)
	if !ok {
		return func() {}
	}
	ns := &l.notes
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.subs == nil {
		ns.subs = map[uint64]func(string, int64){}
	}
	id := ns.next
	ns.next++
	ns.subs[id] = fn
	if ns.cancel == nil {
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		ns.cancel, ns.done = stop, done
		go func() {
			defer close(done)
			l.listen(ctx, n)
		}()
	}
	var once sync.Once
	return func() { once.Do(func() { ns.unsubscribe(id) }) }
}

// unsubscribe removes subscriber id; the last one stops the listener and
// waits for it.
func (ns *notifications) unsubscribe(id uint64) {
	ns.mu.Lock()
	delete(ns.subs, id)
	var done chan struct{}
	if len(ns.subs) == 0 && ns.cancel != nil {
		ns.cancel()
		done = ns.done
		ns.cancel, ns.done = nil, nil
	}
	ns.mu.Unlock()
	if done != nil {
		<-done
	}
}

// notify hands one notification to every subscriber.
func (ns *notifications) notify(space string, head int64) {
	ns.mu.Lock()
	fns := make([]func(string, int64), 0, len(ns.subs))
	for _, fn := range ns.subs {
		fns = append(fns, fn)
	}
	ns.mu.Unlock()
	for _, fn := range fns {
		fn(space, head)
	}
}

// listen runs the store's Listen until ctx ends, restarting it with
// backoff if it fails.
func (l *Log) listen(ctx context.Context, n store.Notifier) {
	delay := 100 * time.Millisecond
	for {
		start := time.Now()
		err := n.Listen(ctx, l.notes.notify)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > subscribeBackoffMax {
			delay = 100 * time.Millisecond
		}
		l.logger().Warn("changelog: listen for commits failed; retrying", "err", err, "retryIn", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, subscribeBackoffMax)
	}
}

// logger returns Options.Logger, or slog.Default.
func (l *Log) logger() *slog.Logger {
	if l.opts.Logger != nil {
		return l.opts.Logger
	}
	return slog.Default()
}
