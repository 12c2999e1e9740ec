package changelog

import (
	"context"
	"slices"
	"sync"
	"time"
)

// committer batches concurrent writes to one space into shared database
// transactions (group commit) without a goroutine of its own: the first
// writer to arrive leads, runs every queued request as one group, and when
// its own request is done hands the lead to the next waiter.
type committer struct {
	mu      sync.Mutex
	queue   []*pending // guarded by mu
	running bool       // a leader exists; guarded by mu
	// recent are the sizes of the last groups (a ring, next at ri):
	// under load, writers come back about that many at a time. guarded by
	// mu.
	recent [recentGroups]int
	ri     int
	// shorter halves the linger per timed-out wait since the last one the
	// queue filled. guarded by mu.
	shorter int
	// full, when set, is closed by submit once the queue holds want
	// requests: a lingering leader waits on it. guarded by mu.
	full chan struct{}
	want int
	// idle, when set, is closed by handOff once no group is left to run
	// (see Log.Busy). guarded by mu.
	idle chan struct{}
}

// pending is one queued write request and its answer.
type pending struct {
	ctx  context.Context
	req  WriteRequest
	res  WriteResult
	err  error
	done chan struct{} // closed when res/err are set
	lead chan struct{} // closed when this waiter must lead
}

func (l *Log) committerFor(space string) *committer {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.committers[space]
	if !ok {
		c = &committer{}
		l.committers[space] = c
	}
	return c
}

// Busy reports whether a group of space's writes is running or waiting
// to run. If so, idle is closed once the space has no group left to run
// (a later write may start another). The trigger engine lets delivery
// updates ride the transaction of a group under way instead of taking one
// of their own (see InCommit).
func (l *Log) Busy(space string) (busy bool, idle <-chan struct{}) {
	l.mu.Lock()
	c, ok := l.committers[space]
	l.mu.Unlock()
	if !ok {
		return false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return false, nil
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	return true, c.idle
}

// submit queues p and returns when it is answered. A caller whose context
// ends before its request is taken into a group gets ctx.Err() and its
// request is dropped; once taken, the request completes.
func (l *Log) submit(c *committer, p *pending) {
	c.mu.Lock()
	c.queue = append(c.queue, p)
	if c.full != nil && len(c.queue) >= c.want {
		close(c.full)
		c.full = nil
	}
	leader := !c.running
	c.running = true
	c.mu.Unlock()
	if !leader {
		select {
		case <-p.done:
			return
		case <-p.lead:
		}
	}
	l.lead(c, p)
}

// lead runs groups until own is answered, then passes the lead on.
func (l *Log) lead(c *committer, own *pending) {
	for {
		c.linger(l.opts.Linger, l.opts.MaxBatch)
		group := c.take(l.opts.MaxBatch)
		if len(group) > 0 {
			l.runGroup(group)
		}
		select {
		case <-own.done:
			c.handOff()
			return
		default:
		}
	}
}

// recentGroups is how many group sizes linger looks back over.
const recentGroups = 8

// maxShorter bounds the halvings of the linger: it never drops below
// 1/16 of Options.Linger.
const maxShorter = 4

// linger waits for the queue to fill up to the largest recent group size
// before the leader takes it: under load the writers the recent groups
// answered are on their way back, and one transaction (one lock, one
// fsync) for all of them beats two. Aiming at the largest rather than the
// last size keeps one short group (a writer a little late) from making
// the next one short too. It waits at most d, halved for each wait since
// the last one the queue filled (a writer gone for good costs ever less),
// down to d/16. It does not wait when the recent groups were single
// requests (no load) or the queue is already that full.
func (c *committer) linger(d time.Duration, max int) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	want := min(slices.Max(c.recent[:]), max)
	if want <= 1 || len(c.queue) >= want {
		c.mu.Unlock()
		return
	}
	full := make(chan struct{})
	c.full, c.want = full, want
	d >>= c.shorter
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-full:
		c.mu.Lock()
		c.shorter = 0
		c.mu.Unlock()
	case <-t.C:
		c.mu.Lock()
		if c.full == full { // not filled meanwhile
			c.full = nil
			c.shorter = min(c.shorter+1, maxShorter)
		} else {
			c.shorter = 0
		}
		c.mu.Unlock()
	}
}

// take removes up to max live requests from the queue; requests whose
// context already ended are answered with that error and skipped.
func (c *committer) take(max int) []*pending {
	c.mu.Lock()
	defer c.mu.Unlock()
	var group []*pending
	for len(c.queue) > 0 && len(group) < max {
		p := c.queue[0]
		c.queue = c.queue[1:]
		if err := p.ctx.Err(); err != nil {
			p.err = err
			close(p.done)
			continue
		}
		group = append(group, p)
	}
	if len(group) > 0 {
		c.recent[c.ri] = len(group)
		c.ri = (c.ri + 1) % recentGroups
	}
	return group
}

// handOff makes the oldest waiter the leader, or ends leadership.
func (c *committer) handOff() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		c.running = false
		if c.idle != nil {
			close(c.idle)
			c.idle = nil
		}
		return
	}
	close(c.queue[0].lead)
}
