package engine

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
