package changelog

import (
	"context"
	"sync"
)

// committer batches concurrent writes to one space into shared database
// transactions (group commit) without a goroutine of its own: the first
// writer to arrive leads, runs every queued request as one group, and when
// its own request is done hands the lead to the next waiter.
type committer struct {
	mu      sync.Mutex
	queue   []*pending // guarded by mu
	running bool       // a leader exists; guarded by mu
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

// submit queues p and returns when it is answered. A caller whose context
// ends before its request is taken into a group gets ctx.Err() and its
// request is dropped; once taken, the request completes.
func (l *Log) submit(c *committer, p *pending) {
	c.mu.Lock()
	c.queue = append(c.queue, p)
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
	return group
}

// handOff makes the oldest waiter the leader, or ends leadership.
func (c *committer) handOff() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		c.running = false
		return
	}
	close(c.queue[0].lead)
}
