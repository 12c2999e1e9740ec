package engine

// InCommitCounts returns how many groups the engine judged in their
// commit and how many the in-commit budget left to the evaluator.
func InCommitCounts(e *Engine) (groups, skips int64) {
	return e.inCommitGroups.Load(), e.inCommitSkips.Load()
}
