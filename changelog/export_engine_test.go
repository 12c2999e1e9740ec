package changelog

import "time"

// QueueLen returns how many requests wait in space's group committer.
func QueueLen(l *Log, space string) int {
	c := l.committerFor(space)
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// SetProbe shrinks l's ambiguous-commit probe: attempts, first backoff.
func SetProbe(l *Log, attempts int, backoff time.Duration) {
	l.probing = probeTuning{attempts: attempts, backoff: backoff}
}
