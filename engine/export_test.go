package engine

import (
	"context"
	"time"
)

// InCommitCounts returns how many groups the engine judged in their
// commit and how many the in-commit budget left to the evaluator.
func InCommitCounts(e *Engine) (groups, skips int64) {
	return e.inCommitGroups.Load(), e.inCommitSkips.Load()
}

// HoldSpace takes the lock the evaluator of space holds while it works
// (as a slow evaluation would) and returns its release; false when this
// process runs no such space.
func HoldSpace(e *Engine, space string) (release func(), ok bool) {
	e.mu.Lock()
	sr := e.spaces[space]
	e.mu.Unlock()
	if sr == nil {
		return nil, false
	}
	sr.mu.Lock()
	return sr.mu.Unlock, true
}

// StopEvaluator ends the evaluator goroutine of space (its loop: no
// evaluation, poll or cron firing runs again) and reports whether this
// process runs the space. Writes are still judged in their commit and
// deliveries still run.
func StopEvaluator(e *Engine, space string) bool {
	e.mu.Lock()
	sr := e.spaces[space]
	e.mu.Unlock()
	if sr == nil {
		return false
	}
	sr.cancel()
	sr.wg.Wait()
	return true
}

// PauseEvaluator ends the evaluator goroutine of space as StopEvaluator
// does and returns a resume that starts it again and wakes it.
func PauseEvaluator(e *Engine, space string) (resume func(), ok bool) {
	if !StopEvaluator(e, space) {
		return nil, false
	}
	e.mu.Lock()
	sr := e.spaces[space]
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		sr.start(context.Background())
		sr.wake()
	}, true
}

// CatchUpPages is how many batches one catch-up read holds.
const CatchUpPages = catchUpPages

// SetRideWait sets how long delivery updates wait for a write group to
// take them (ride.go); call it before the engine starts.
func SetRideWait(e *Engine, d time.Duration) { e.rideWait = d }

// RidersWaiting counts the batches of delivery updates waiting for a
// write group of space.
func RidersWaiting(e *Engine, space string) int {
	e.riders.mu.Lock()
	defer e.riders.mu.Unlock()
	return len(e.riders.waiting[space])
}
