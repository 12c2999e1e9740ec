package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/eddy-run/eddy/store"
)

// Draining dispatchers.
const (
	// maxDrains bounds the dispatchers draining at once.
	maxDrains = 8
	// releaseTimeout bounds one lease release after its trigger drained.
	releaseTimeout = 5 * time.Second
)

// drainer stops dispatchers off the goroutine that renews leases and
// outside every spaceRun.mu, at most maxDrains at a time, each followed
// by what must come after it (releasing its lease). A hand-over that
// takes drainTimeout therefore holds up no lease round.
type drainer struct {
	sem chan struct{}
	wg  sync.WaitGroup

	mu      sync.Mutex
	abort   chan struct{} // guarded by mu; closed to cancel every drain at once
	aborted bool          // guarded by mu
}

func newDrainer() *drainer {
	return &drainer{sem: make(chan struct{}, maxDrains), abort: make(chan struct{})}
}

// stop drains d in the background, then runs then (if set).
func (dr *drainer) stop(d *dispatcher, then func()) {
	dr.wg.Go(func() {
		dr.sem <- struct{}{}
		d.stop(dr.abort)
		<-dr.sem
		if then != nil {
			then()
		}
	})
}

// abortAll cancels the attempts of every drain under way or to come.
func (dr *drainer) abortAll() {
	dr.mu.Lock()
	defer dr.mu.Unlock()
	if !dr.aborted {
		dr.aborted = true
		close(dr.abort)
	}
}

// wait returns once every drain handed over so far ended.
func (dr *drainer) wait() { dr.wg.Wait() }

// releaseAfterDrain returns what releases a drained trigger's lease,
// with its own deadline.
func (sr *spaceRun) releaseAfterDrain(l lease) func() {
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		err := sr.e.st.LeaseRelease(ctx, sr.id, l.name, sr.e.opts.Owner, l.epoch)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			sr.e.logger.Warn("engine: release lease", "space", sr.id, "trigger", l.name, "err", err)
		}
	}
}
