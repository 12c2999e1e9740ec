package changelog

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestLingerReleasedByArrivals: a leader lingering for the previous
// group's size is released as soon as that many requests are queued, not
// by its (here endless) timer.
func TestLingerReleasedByArrivals(t *testing.T) {
	c := &committer{recent: [recentGroups]int{3}}
	c.queue = []*pending{{ctx: context.Background()}}
	released := lingering(c)
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
		{recent: [recentGroups]int{1, 1}},
		{recent: [recentGroups]int{2, 1}, queue: []*pending{{}, {}}},
	} {
		done := make(chan struct{})
		go func() {
			c.linger(time.Hour, 128)
			close(done)
		}()
		<-done
	}
}

// TestLingerTargetsLargestRecent: the leader waits for the largest of the
// recent group sizes, not the last one, and take records each group.
func TestLingerTargetsLargestRecent(t *testing.T) {
	c := &committer{}
	for _, n := range []int{5, 2} {
		for range n {
			c.queue = append(c.queue, &pending{ctx: context.Background()})
		}
		if got := len(c.take(128)); got != n {
			t.Fatalf("take = %d requests, want %d", got, n)
		}
	}
	c.queue = []*pending{{}, {}, {}}
	c.linger(time.Nanosecond, 128)
	if c.want != 5 {
		t.Fatalf("linger waited for %d requests, want 5", c.want)
	}
	c.queue = c.queue[:2]
	if c.linger(time.Nanosecond, 3); c.want != 3 {
		t.Fatalf("linger waited for %d requests, want max 3", c.want)
	}
}

// TestLingerHalvesOnTimeout: each linger that times out halves the next
// one, down to a sixteenth; one the queue fills restores the full wait.
func TestLingerHalvesOnTimeout(t *testing.T) {
	c := &committer{recent: [recentGroups]int{4}}
	for i := range maxShorter + 2 {
		if want := min(i, maxShorter); c.shorter != want {
			t.Fatalf("after %d timeouts shorter = %d, want %d", i, c.shorter, want)
		}
		c.linger(time.Nanosecond, 128)
	}
	c.queue = []*pending{{}}
	released := lingering(c)
	c.mu.Lock()
	c.queue = append(c.queue, &pending{}, &pending{}, &pending{})
	close(c.full)
	c.full = nil
	c.mu.Unlock()
	<-released
	if c.shorter != 0 {
		t.Fatalf("after a filled linger shorter = %d, want 0", c.shorter)
	}
}

// lingering starts c lingering with an endless timer and returns once it
// waits for its queue to fill (c.full set); the channel closes when the
// linger returns.
func lingering(c *committer) <-chan struct{} {
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
			return released
		}
		runtime.Gosched()
	}
}
