package changelog

// QueueLen returns how many requests wait in space's group committer.
func QueueLen(l *Log, space string) int {
	c := l.committerFor(space)
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}
