package engine

import (
	"context"
	"errors"
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
// Everything else stays the evaluator's: triggers behind (or ahead of)
// the predecessor, triggers leased elsewhere, catch-up after a restart,
// and every group the in-commit path gives up on. It gives up, writing
// nothing, when:
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

// inCommit is the log's changelog.InCommit hook.
func (e *Engine) inCommit(ctx context.Context, tx store.WriteTx, g changelog.InCommitGroup) (func(error), error) {
	e.liveMu.Lock()
	sr := e.live[g.Space]
	e.liveMu.Unlock()
	if sr == nil || len(g.Commits) == 0 {
		return nil, nil
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

// inCommit judges the group for the eligible triggers and writes their
// advances into tx; nil finish: it judged nothing (see above).
func (sr *spaceRun) inCommit(ctx context.Context, tx store.WriteTx, g changelog.InCommitGroup) (func(error), error) {
	if !sr.mu.TryLock() {
		return nil, nil
	}
	p, err := sr.planInCommit(ctx, tx, g)
	if p == nil || err != nil {
		sr.mu.Unlock()
		return nil, err
	}
	finish := func(err error) { sr.settleInCommit(p, err) }
	advances, _, _ := advancesOf(p.batches, p.end)
	return finish, tx.TriggerAdvanceTx(ctx, advances)
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
	eligible := map[string]*trig{}
	for name, t := range active {
		if t.state.Cursor == g.Prev && !t.fenced {
			eligible[name] = t
		}
	}
	if len(eligible) == 0 || !sr.indexCurrent(active) {
		return nil, nil
	}
	p := &inCommitPlan{batches: newBatches(eligible), commits: g.Commits,
		end: g.Commits[len(g.Commits)-1].Seq, all: len(eligible) == len(active), started: time.Now()}
	budget := triggers.Budget{Candidates: sr.e.opts.InCommitCandidates, Cost: sr.e.opts.InCommitCost}
	if !sr.judgeInto(sr.index, p.batches, g.Commits, &budget) {
		sr.e.inCommitSkips.Add(1)
		return nil, nil
	}
	// A root written in this group has caused nothing yet: its causal
	// budget is whole, and a group of root writes reads no counter.
	spent := map[int64]causality.Spent{}
	for _, b := range p.batches {
		for _, c := range b.causes {
			if c.RootSeq() == c.Seq {
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
