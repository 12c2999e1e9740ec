package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/eddy-run/eddy/store"
)

// maxCompletions bounds the delivery updates one transaction carries.
const maxCompletions = 256

// completer applies the delivery updates that carry no writes (a function
// that returned nothing, a failed or retried attempt, a webhook's running
// mark) in shared transactions: while one transaction is under way the
// next updates queue, and the next transaction takes them all. A lone
// update waits for nothing.
type completer struct {
	st store.Store
	// ride, when set, offers one space's updates to a write group under
	// way (Engine.ride); ok false: write them here.
	ride func(space string, us []store.DeliveryUpdate) (errs []error, ok bool)
	reqs chan completion

	// mu guards started, stopped and cancel; enqueue holds it while
	// sending so nothing is queued after stop.
	mu      sync.Mutex
	started bool               // guarded by mu
	stopped bool               // guarded by mu
	cancel  context.CancelFunc // guarded by mu
	wg      sync.WaitGroup
}

// completion is one queued update and where its outcome goes.
type completion struct {
	u    store.DeliveryUpdate
	done chan error
}

// errCompleterStopped reports an update queued after the engine closed.
var errCompleterStopped = errors.New("engine: delivery updates stopped")

// newCompleter returns a completer; start runs it.
func newCompleter(st store.Store) *completer {
	return &completer{st: st, reqs: make(chan completion, maxCompletions)}
}

// start runs the completer's goroutine (once; never after stop).
func (c *completer) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.stopped {
		return
	}
	c.started = true
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Go(func() { c.run(ctx) })
}

// update applies u in the next shared transaction and returns its own
// outcome (nil, or wrapping store.ErrFenced or store.ErrNotFound).
func (c *completer) update(ctx context.Context, u store.DeliveryUpdate) error {
	req := completion{u: u, done: make(chan error, 1)}
	if err := c.enqueue(ctx, req); err != nil {
		return err
	}
	return <-req.done
}

// enqueue queues req unless the completer stopped; holding the lock
// while sending means nothing is queued after stop drained the queue.
func (c *completer) enqueue(ctx context.Context, req completion) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || !c.started {
		return errCompleterStopped
	}
	select {
	case c.reqs <- req:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop ends the completer once the updates queued so far are applied.
func (c *completer) stop() {
	c.mu.Lock()
	c.stopped = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.wg.Wait()
}

// run applies queued updates until stopped, then answers whatever is
// left with errCompleterStopped.
func (c *completer) run(ctx context.Context) {
	for {
		select {
		case req := <-c.reqs:
			c.flush(append(make([]completion, 0, maxCompletions), req))
		case <-ctx.Done():
			for {
				select {
				case req := <-c.reqs:
					req.done <- errCompleterStopped
				default:
					return
				}
			}
		}
	}
}

// flush applies batch and whatever else is queued, up to maxCompletions,
// each space's updates together (at once for several spaces).
func (c *completer) flush(batch []completion) {
	for len(batch) < maxCompletions {
		select {
		case req := <-c.reqs:
			batch = append(batch, req)
			continue
		default:
		}
		break
	}
	if c.ride == nil {
		c.write(batch, updates(batch))
		return
	}
	spaces := map[string][]completion{}
	var order []string
	for _, req := range batch {
		if _, ok := spaces[req.u.Space]; !ok {
			order = append(order, req.u.Space)
		}
		spaces[req.u.Space] = append(spaces[req.u.Space], req)
	}
	var wg sync.WaitGroup
	for _, space := range order[1:] {
		wg.Go(func() { c.flushSpace(space, spaces[space]) })
	}
	c.flushSpace(order[0], spaces[order[0]])
	wg.Wait()
}

// flushSpace applies one space's updates in a write group of the space
// under way, or else in a transaction of their own.
func (c *completer) flushSpace(space string, batch []completion) {
	us := updates(batch)
	if errs, ok := c.ride(space, us); ok {
		for i, req := range batch {
			req.done <- errs[i]
		}
		return
	}
	c.write(batch, us)
}

// updates are the updates of batch, in order.
func updates(batch []completion) []store.DeliveryUpdate {
	us := make([]store.DeliveryUpdate, len(batch))
	for i, req := range batch {
		us[i] = req.u
	}
	return us
}

// write applies us, the updates of batch, in one transaction of its own.
func (c *completer) write(batch []completion, us []store.DeliveryUpdate) {
	errs, err := c.st.DeliveryUpdateMany(context.Background(), us)
	for i, req := range batch {
		if err != nil {
			req.done <- err
			continue
		}
		req.done <- errs[i]
	}
}
