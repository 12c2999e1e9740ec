package engine

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// Commit to function in one fsync. The log runs inCommit inside every
// group transaction that appends commits (changelog.InCommit): for the
// triggers this process leases whose cursor is exactly at the group's
// predecessor, the rows are judged there, with the evaluator's own code
// (judgeInto, batch.decide, advancesOf), and their deliveries and fenced
// cursor advances are written into the same transaction. After the
// commit the cursors move in memory and the deliveries go to the
// dispatchers from memory (finish): no read back, no second transaction.
//
// A group the in-commit path does not judge is kept in memory once it
// committed (spaceRun.skipped, the latest ones while they follow each
// other, at most InCommitCandidates commits): a later group judges them
// with its own rows for every trigger whose cursor they reach, so one
// skipped group (the space was locked for a moment) does not leave the
// space to the evaluator for as long as the writes keep coming. Only the
// commits of this process's own groups are kept; a gap (another
// process's commits, a group run again without the hook) ends the run.
//
// Everything else stays the evaluator's: triggers behind the kept
// commits (or ahead of the predecessor), triggers leased elsewhere,
// catch-up after a restart, and every group the in-commit path gives up
// on. It gives up, writing nothing, when:
//
//   - spaceRun.mu is taken (the evaluator, a lease round or an operator's
//     move is under way): the write path never waits for them;
//   - the match index must be rebuilt (a definition changed);
//   - the group's candidates or their CEL cost bounds exceed the budget
//     (Options.InCommitCandidates, Options.InCommitCost);
//   - a delivery past the causality cap or the causal budget needs a
//     park row (park rows are commits of their own, appended by the
//     evaluator);
//   - the trigger's last in-commit advance was fenced (trig.fenced).
//
// A fenced advance (the lease was lost) fails the group's transaction;
// the log runs the group again without the hook, so the write never
// fails for it, and the evaluator's next advance is fenced too and
// reloads the trigger (reload).
//
// Locking. inCommit runs on the group leader's goroutine, inside the
// store's write transaction (the space's write lock). It only TryLocks
// spaceRun.mu, so it never waits for a holder of mu that may itself wait
// for the write lock or for this group (the evaluator's park rows go
// through the log). When it judges, it holds mu from the judging through
// finish, so nothing reads or moves the cursors between the advance it
// wrote and the commit's outcome; finish takes dispatcher.mu and
// progressMu under it (the engine's order: sr.mu before d.mu). The space
// is found through Engine.live (liveMu, a leaf), never Engine.mu.

// Defaults of Options.InCommitCandidates and Options.InCommitCost.
const (
	DefaultInCommitCandidates = 256
	DefaultInCommitCost       = 1_000_000
)

// inCommit is the log's changelog.InCommit hook: it applies the delivery
// updates riding the group (see ride.go), then judges its commits.
func (e *Engine) inCommit(ctx context.Context, tx store.WriteTx, g changelog.InCommitGroup) (func(error), bool, error) {
	settle, err := e.applyRiders(ctx, tx, g.Space)
	if err != nil {
		return nil, false, err
	}
	finish, wrote, err := e.judgeInCommit(ctx, tx, g)
	return both(settle, finish), wrote, err
}

// both returns a finish calling a and b (either may be nil; nil if both are).
func both(a, b func(error)) func(error) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(err error) { a(err); b(err) }
}

// judgeInCommit judges a group's commits for the space's triggers.
func (e *Engine) judgeInCommit(ctx context.Context, tx store.WriteTx, g changelog.InCommitGroup) (func(error), bool, error) {
	e.liveMu.Lock()
	sr := e.live[g.Space]
	e.liveMu.Unlock()
	if sr == nil || len(g.Commits) == 0 {
		return nil, false, nil
	}
	return sr.inCommit(ctx, tx, g)
}

// inCommitPlan is what one group's in-commit judging decided.
type inCommitPlan struct {
	batches map[string]*batch
	commits []store.Commit
	end     int64
	// all: every active change trigger was judged, so the evaluator has
	// nothing to do for this group.
	all     bool
	started time.Time
}

// inCommit judges the group (with the skipped commits before it) for the
// eligible triggers and writes their advances into tx; wrote false: it
// judged nothing (see above), and keeps the group's commits once they
// committed.
func (sr *spaceRun) inCommit(ctx context.Context, tx store.WriteTx, g changelog.InCommitGroup) (func(error), bool, error) {
	keep := func(locked bool) func(error) {
		return func(err error) {
			if err == nil {
				sr.keepSkipped(g.Prev, g.Commits, locked)
			}
		}
	}
	if !sr.mu.TryLock() {
		return keep(true), false, nil
	}
	p, err := sr.planInCommit(ctx, tx, g)
	if err != nil {
		sr.mu.Unlock()
		return nil, false, err
	}
	if p == nil {
		sr.mu.Unlock()
		return keep(false), false, nil
	}
	finish := func(err error) { sr.settleInCommit(p, err) }
	advances, _, _ := advancesOf(p.batches, p.end)
	return finish, true, tx.TriggerAdvanceTx(ctx, advances)
}

// keepSkipped keeps the commits of a group that committed after prev
// without being judged in it, after the kept ones when they end at prev
// (else instead of them), keeping the latest InCommitCandidates. locked:
// the group was skipped only because the space's lock was taken, so the
// next group is likely to judge it (see kept).
func (sr *spaceRun) keepSkipped(prev int64, cs []store.Commit, locked bool) {
	sr.skippedMu.Lock()
	defer sr.skippedMu.Unlock()
	if n := len(sr.skipped); n > 0 && sr.skipped[n-1].Seq != prev {
		sr.skipped = nil
	}
	sr.skipped = append(sr.skipped, cs...)
	budget := max(sr.e.opts.InCommitCandidates, 0)
	if over := len(sr.skipped) - budget; over > 0 {
		sr.skipped = slices.Clone(sr.skipped[over:])
	}
	sr.likely = locked && len(sr.skipped) <= budget/2
}

// keptGrace is how long a commit kept for the next group (see
// keepSkipped) waits before it wakes the evaluator: under load the next
// group comes within a commit or two and judges it; in a quiet space
// the evaluator does, this much later. Waking the evaluator at once
// would have it read the rows back while holding the space's lock, so
// the groups committing meanwhile would be skipped in turn.
const keptGrace = 5 * time.Millisecond

// kept reports whether the kept commits end at seq head and the next
// group is likely to judge them: the last was skipped only for the lock,
// and they fill at most half the in-commit budget. Otherwise (a group
// given up for the budget, a park row, a stale index) waiting would only
// delay the evaluator.
func (sr *spaceRun) kept(head int64) bool {
	sr.skippedMu.Lock()
	defer sr.skippedMu.Unlock()
	n := len(sr.skipped)
	return n > 0 && sr.skipped[n-1].Seq == head && sr.likely
}

// skippedThrough returns the kept commits that end at seq prev (in seq
// order, one after the other), or none.
func (sr *spaceRun) skippedThrough(prev int64) []store.Commit {
	sr.skippedMu.Lock()
	defer sr.skippedMu.Unlock()
	if n := len(sr.skipped); n == 0 || sr.skipped[n-1].Seq != prev {
		return nil
	}
	return sr.skipped
}

// dropSkipped forgets the kept commits: a group judged after them.
func (sr *spaceRun) dropSkipped() {
	sr.skippedMu.Lock()
	defer sr.skippedMu.Unlock()
	sr.skipped, sr.likely = nil, false
}

// planInCommit judges the group for the triggers whose cursor is at its
// predecessor; nil when it must be left to the evaluator. The causal
// budget counters of the chains the group continues are read in tx, so
// they hold the group's own rows, as the evaluator would see them. The
// caller holds sr.mu.
func (sr *spaceRun) planInCommit(ctx context.Context, tx store.WriteTx, g changelog.InCommitGroup) (*inCommitPlan, error) {
	if sr.stopped {
		return nil, nil
	}
	active := sr.activeChange()
	earlier := sr.skippedThrough(g.Prev)
	first := g.Prev + 1 - int64(len(earlier)) // the seq of earlier[0]
	eligible := map[string]*trig{}
	from := g.Prev // the lowest eligible cursor
	for name, t := range active {
		if c := t.state.Cursor; !t.fenced && c <= g.Prev && c+1 >= first {
			eligible[name] = t
			from = min(from, c)
		}
	}
	if len(eligible) == 0 || !sr.indexCurrent(active) {
		return nil, nil
	}
	commits := append(slices.Clip(earlier[from+1-first:]), g.Commits...)
	p := &inCommitPlan{batches: newBatches(eligible), commits: commits,
		end: g.Commits[len(g.Commits)-1].Seq, all: len(eligible) == len(active), started: time.Now()}
	if !sr.judgeFrom(p, from) {
		sr.e.inCommitSkips.Add(1)
		return nil, nil
	}
	// A root written in this group has caused nothing yet: its causal
	// budget is whole, and a group of root writes reads no counter. A
	// root among the skipped commits may have caused rows already (the
	// evaluator may have judged it for another trigger): its counter is
	// read in tx, as the evaluator would read it.
	spent := map[int64]causality.Spent{}
	for _, b := range p.batches {
		for _, c := range b.causes {
			if c.RootSeq() == c.Seq && c.Seq > g.Prev {
				spent[c.Seq] = causality.Spent{}
			}
		}
	}
	if err := sr.decide(ctx, tx.RootCounts, p.batches, spent); err != nil {
		return nil, err
	}
	for _, b := range p.batches {
		if len(b.parks) > 0 {
			return nil, nil
		}
	}
	if p.all {
		sr.judging.Store(p.end)
	}
	return p, nil
}

// judgeFrom judges p's commits (the first one at seq from+1) for each
// batch of p from its trigger's cursor on, under one budget; false: the
// budget ran out.
func (sr *spaceRun) judgeFrom(p *inCommitPlan, from int64) bool {
	budget := triggers.Budget{Candidates: sr.e.opts.InCommitCandidates, Cost: sr.e.opts.InCommitCost}
	byCursor := map[int64]map[string]*batch{}
	for name, b := range p.batches {
		c := b.t.state.Cursor
		if byCursor[c] == nil {
			byCursor[c] = map[string]*batch{}
		}
		byCursor[c][name] = b
	}
	for _, c := range slices.Sorted(maps.Keys(byCursor)) {
		if !sr.judgeInto(sr.index, byCursor[c], p.commits[c-from:], &budget) {
			return false
		}
	}
	return true
}

// settleInCommit ends one in-commit judging with the transaction's
// outcome and releases sr.mu: committed, the cursors move and the
// deliveries go to the dispatchers; fenced, the triggers are left to the
// evaluator until their state is read again.
func (sr *spaceRun) settleInCommit(p *inCommitPlan, err error) {
	defer sr.mu.Unlock()
	if err != nil {
		sr.judging.Store(0)
		if errors.Is(err, store.ErrFenced) {
			for _, b := range p.batches {
				b.t.fenced = true
			}
		}
		sr.wake() // a notification skipped while judging
		return
	}
	settle(p.batches, p.end)
	sr.dropSkipped()
	if p.all && sr.through.Load() < p.end {
		sr.through.Store(p.end)
	}
	sr.judging.Store(0)
	sr.e.inCommitGroups.Add(1)
	sr.finish(p.batches, bySeq(p.commits), time.Since(p.started), len(p.commits))
}

// bySeq indexes a group's commits by seq.
func bySeq(cs []store.Commit) map[int64]*store.Commit {
	m := make(map[int64]*store.Commit, len(cs))
	for i := range cs {
		m[cs[i].Seq] = &cs[i]
	}
	return m
}
