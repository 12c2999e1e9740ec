package changelog

import (
	"context"
	"testing"
	"time"
)

// TestLingerReleasedByArrivals: a leader lingering for the previous
// group's size is released as soon as that many requests are queued, not
// by its (here endless) timer.
func TestLingerReleasedByArrivals(t *testing.T) {
	c := &committer{last: 3}
	c.queue = []*pending{{ctx: context.Background()}}
	released := make(chan struct{})
	go func() {
		c.linger(time.Hour, 128)
		close(released)
	}()
	for {
		c.mu.Lock()
		waiting := c.full != nil
		c.mu.Unlock()
		if waiting {
			break
		}
		time.Sleep(time.Millisecond)
	}
	l := &Log{}
	for range 2 {
		c.mu.Lock()
		c.running = true // a leader exists: submit only queues
		c.mu.Unlock()
		p := &pending{ctx: context.Background(), done: make(chan struct{}), lead: make(chan struct{})}
		close(p.done) // answered at once, so submit returns
		l.submit(c, p)
	}
	<-released
}

// TestLingerNotWithoutLoad: after a single-request group, or with a queue
// already as full as the last group, the leader does not wait.
func TestLingerNotWithoutLoad(t *testing.T) {
	for _, c := range []*committer{
		{last: 1},
		{last: 2, queue: []*pending{{}, {}}},
	} {
		done := make(chan struct{})
		go func() {
			c.linger(time.Hour, 128)
			close(done)
		}()
		<-done
	}
}
