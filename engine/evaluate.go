package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// batch is one evaluation's work for one trigger.
type batch struct {
	t          *trig
	deliveries []store.Delivery
	co         triggers.Coalescer
	failures   []store.FilterFailure
	parks      []changelog.EngineRow
	// budgetParks are the roots whose budget park row this batch writes.
	budgetParks []int64
	causes      map[string]causality.Cause
	committed   bool
}

// evaluate judges one batch of rows above the lowest cursor of the
// active change triggers, creates the deliveries and advances every
// cursor in one transaction. more reports that rows remain.
func (sr *spaceRun) evaluate(ctx context.Context) (more bool, err error) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	active := sr.activeChange()
	if len(active) == 0 {
		return false, nil
	}
	lo := int64(-1)
	for _, t := range active {
		if lo < 0 || t.state.Cursor < lo {
			lo = t.state.Cursor
		}
	}
	started := time.Now()
	ctx, span := tracer().Start(ctx, "eddy.evaluate", trace.WithAttributes(
		attribute.String("eddy.space", sr.id), attribute.Int64("eddy.after", lo), attribute.Int("eddy.triggers", len(active))))
	defer span.End()
	page, err := sr.read(ctx, lo)
	var gone *changelog.HistoryUnavailableError
	if errors.As(err, &gone) {
		return sr.skipPruned(ctx, active, gone.Horizon)
	}
	if err != nil {
		return false, fmt.Errorf("read after %d: %w", lo, err)
	}
	if len(page.Commits) == 0 {
		return false, nil
	}
	end := page.Commits[len(page.Commits)-1].Seq
	span.SetAttributes(attribute.Int64("eddy.through", end), attribute.Int("eddy.rows", len(page.Commits)))
	if page.HasMore {
		sr.readAhead(ctx, end)
	}
	batches := sr.judge(active, page.Commits)
	if err := sr.decide(ctx, batches); err != nil {
		return false, err
	}
	if err := sr.commit(ctx, batches, end); err != nil {
		return false, err
	}
	sr.finish(batches, bySeq(page.Commits), time.Since(started), len(page.Commits))
	return page.HasMore, nil
}

// prefetch is a page read ahead while the previous one is judged and
// committed.
type prefetch struct {
	after int64
	done  chan struct{}
	page  changelog.PullPage
	err   error
}

// read returns the page after the position, from the read-ahead when it
// read that position.
func (sr *spaceRun) read(ctx context.Context, after int64) (changelog.PullPage, error) {
	if p := sr.ahead; p != nil {
		sr.ahead = nil
		if p.after == after {
			<-p.done
			if p.err == nil {
				return p.page, nil
			}
		}
	}
	return sr.e.log.PullWith(ctx, sr.id, after, sr.e.opts.Batch, evalPull)
}

// evalPull reads what the evaluator and the functions need: no receipts.
var evalPull = changelog.PullOptions{NoReceipts: true}

// readAhead starts reading the page after the position.
func (sr *spaceRun) readAhead(ctx context.Context, after int64) {
	p := &prefetch{after: after, done: make(chan struct{})}
	sr.ahead = p
	sr.wg.Go(func() {
		defer close(p.done)
		p.page, p.err = sr.e.log.PullWith(ctx, sr.id, after, sr.e.opts.Batch, evalPull)
	})
}

// judge runs the rows through the match index and builds each trigger's
// deliveries and recorded errors; the stance of every row is the one
// judge's (triggers.Judge), given the index's answer.
func (sr *spaceRun) judge(active map[string]*trig, commits []store.Commit) map[string]*batch {
	out := newBatches(active)
	sr.judgeInto(sr.indexFor(active), out, commits, nil)
	return out
}

// newBatches returns an empty batch for each trigger.
func newBatches(ts map[string]*trig) map[string]*batch {
	out := make(map[string]*batch, len(ts))
	for name, t := range ts {
		out[name] = &batch{t: t, causes: map[string]causality.Cause{}}
	}
	return out
}

// judgeInto judges the rows for the triggers of out (the index may hold
// more) and builds each batch's deliveries and failures (the caller then
// decides them: spaceRun.decide, or planInCommit), charging every candidate to budget (nil:
// unbounded). ok false: the budget ran out and out is incomplete.
func (sr *spaceRun) judgeInto(idx *triggers.Index, out map[string]*batch, commits []store.Commit, budget *triggers.Budget) (ok bool) {
	now := sr.e.now()
	for i := range commits {
		c := &commits[i]
		rs, ok := idx.MatchWithin(triggers.SubjectOf(c), budget)
		if !ok {
			return false
		}
		for _, r := range rs {
			b := out[r.Trigger]
			if b == nil || c.Seq <= b.t.state.Cursor {
				continue
			}
			v := triggers.Judge(b.t.def, c, triggers.Context{Match: &r})
			switch v.Stance {
			case triggers.StanceError:
				b.failures = append(b.failures, store.FilterFailure{Trigger: r.Trigger, Seq: c.Seq, Error: v.ErrorText()})
			case triggers.StanceMatched:
				b.add(sr.id, c, now)
			}
		}
	}
	return true
}

// decide reads what the roots of the batches' deliveries have caused so
// far, in one query, and applies the causality limits to every delivery.
func (sr *spaceRun) decide(ctx context.Context, batches map[string]*batch) error {
	var roots []int64
	seen := map[int64]bool{}
	for _, b := range batches {
		for _, c := range b.causes {
			if r := c.RootSeq(); !seen[r] {
				seen[r] = true
				roots = append(roots, r)
			}
		}
	}
	spent, err := sr.spent(ctx, roots)
	if err != nil {
		return err
	}
	for _, b := range batches {
		b.decide(sr.e.opts.SpaceCap, sr.e.opts.SpaceBudget, spent)
	}
	return nil
}

// spent returns the causal budget counters of roots, as causality.Spent.
func (sr *spaceRun) spent(ctx context.Context, roots []int64) (map[int64]causality.Spent, error) {
	out := make(map[int64]causality.Spent, len(roots))
	if len(roots) == 0 {
		return out, nil
	}
	counts, err := sr.e.st.RootCounts(ctx, sr.id, roots)
	if err != nil {
		return nil, fmt.Errorf("read root counts: %w", err)
	}
	for r, c := range counts {
		out[r] = causality.Spent{Rows: c.Rows, Parked: c.Parked}
	}
	return out, nil
}

// add creates the delivery of a matched row; with coalesce it replaces
// the batch's earlier delivery of the same entity.
func (b *batch) add(space string, c *store.Commit, now time.Time) {
	key := store.EntityKey{Type: c.Type, ID: c.EntityID}
	d := store.Delivery{
		ID: newDeliveryID(), Space: space, Trigger: b.t.def.Name, Seq: c.Seq, Entity: key,
		Status: store.DeliveryPending, Depth: causality.Next(causality.CauseOf(c)),
		CreatedAt: now, UpdatedAt: now,
	}
	b.causes[d.ID] = causality.CauseOf(c)
	if b.t.def.Coalesce {
		if slot, replaced := b.co.Slot(key, len(b.deliveries)); replaced {
			delete(b.causes, b.deliveries[slot].ID)
			b.deliveries[slot] = d
			return
		}
	}
	b.deliveries = append(b.deliveries, d)
}

// decide applies the causality limits (causality.Decide): a delivery
// past the depth cap or the causal budget is parked instead of run, with
// a park row unless its cause is a park row or, for the budget, its root
// already has its park row. spent holds what each root has caused; a
// budget park marks its root parked there, so the rest of the
// evaluation parks quietly.
func (b *batch) decide(spaceCap, spaceBudget int, spent map[int64]causality.Spent) {
	lim := causality.Limits{SpaceCap: spaceCap, TriggerCap: b.t.def.CausalityCap,
		SpaceBudget: spaceBudget, TriggerBudget: b.t.def.CausalBudget}
	for i := range b.deliveries {
		d := &b.deliveries[i]
		cause := b.causes[d.ID]
		root := cause.RootSeq()
		v := causality.Decide(cause, lim, spent[root])
		switch v.Decision {
		case causality.Run:
			continue
		case causality.Park:
			b.parks = append(b.parks, causality.NewPark(causality.Effect{Trigger: d.Trigger, ID: d.ID, Cause: cause}, v))
			if v.Limit == causality.LimitBudget {
				s := spent[root]
				s.Parked = true
				spent[root] = s
				b.budgetParks = append(b.budgetParks, root)
			}
		}
		d.Status = store.DeliveryParked
		d.LastError = v.Reason()
	}
}

// commit stores every trigger's deliveries and errors and moves its
// cursor to end, in one transaction fenced by the leases; park rows are
// appended in the same transaction.
func (sr *spaceRun) commit(ctx context.Context, batches map[string]*batch, end int64) error {
	advances, parks, parked := advancesOf(batches, end)
	var err error
	if len(parks) == 0 {
		err = sr.e.st.TriggerAdvance(ctx, sr.id, advances)
	} else {
		_, err = sr.e.log.Write(ctx, changelog.WriteRequest{Space: sr.id, Engine: parks,
			Effects: func(ctx context.Context, tx store.WriteTx, _ changelog.WriteResult) error {
				if len(parked) > 0 {
					if err := tx.RootCountAdd(ctx, parked); err != nil {
						return err
					}
				}
				return tx.TriggerAdvanceTx(ctx, advances)
			}})
	}
	if errors.Is(err, store.ErrFenced) {
		names := make([]string, len(advances))
		for i, a := range advances {
			names[i] = a.Trigger
		}
		sr.reload(ctx, names)
		sr.wake()
		return nil
	}
	if err != nil {
		return fmt.Errorf("advance to %d: %w", end, err)
	}
	settle(batches, end)
	return nil
}

// advancesOf returns the fenced advances that move every batch's cursor
// to end with its deliveries and errors, the park rows to append with
// them, both in trigger order, and the roots whose budget park row they
// hold (to mark parked in the same transaction).
func advancesOf(batches map[string]*batch, end int64) ([]store.Advance, []changelog.EngineRow, []store.RootCount) {
	var advances []store.Advance
	var parks []changelog.EngineRow
	var parked []store.RootCount
	for _, name := range slices.Sorted(maps.Keys(batches)) {
		b := batches[name]
		if b.t.state.Cursor >= end {
			continue
		}
		advances = append(advances, store.Advance{
			Trigger: b.t.def.Name, Epoch: b.t.state.Epoch, From: b.t.state.Cursor, To: end,
			Deliveries: b.deliveries, Failures: b.failures,
		})
		parks = append(parks, b.parks...)
		for _, r := range b.budgetParks {
			parked = append(parked, store.RootCount{Root: r, Parked: true})
		}
	}
	return advances, parks, parked
}

// settle moves the in-memory cursors to end once the advances of
// advancesOf committed.
func settle(batches map[string]*batch, end int64) {
	for _, b := range batches {
		if b.t.state.Cursor < end {
			b.t.state.Cursor = end
			b.committed = true
		}
	}
}

// finish hands the new deliveries to the dispatchers and reports the
// batch.
func (sr *spaceRun) finish(batches map[string]*batch, commits map[int64]*store.Commit, took time.Duration, rows int) {
	for name, b := range batches {
		if !b.committed {
			continue
		}
		b.t.disp.add(b.deliveries, commits)
		parked := 0
		for _, d := range b.deliveries {
			if d.Status == store.DeliveryParked {
				parked++
			}
		}
		sr.e.observe(Event{Space: sr.id, Trigger: name, Kind: "evaluated", Rows: rows, Matched: len(b.deliveries), Parked: parked, Duration: took})
	}
	sr.e.progressed()
}

// bySeq indexes a page's commits by seq.
func bySeq(cs []store.Commit) map[int64]*store.Commit {
	m := make(map[int64]*store.Commit, len(cs))
	for i := range cs {
		m[cs[i].Seq] = &cs[i]
	}
	return m
}

// skipPruned moves the cursors below the horizon up to it: those rows
// were pruned (with force) before the trigger judged them.
func (sr *spaceRun) skipPruned(ctx context.Context, active map[string]*trig, horizon int64) (bool, error) {
	batches := map[string]*batch{}
	for name, t := range active {
		if t.state.Cursor < horizon {
			batches[name] = &batch{t: t}
		}
	}
	sr.e.logger.Warn("engine: rows pruned before triggers judged them", "space", sr.id, "horizon", horizon, "triggers", len(batches))
	if err := sr.commit(ctx, batches, horizon); err != nil {
		return false, err
	}
	sr.finish(batches, nil, 0, 0)
	return true, nil
}

// newDeliveryID returns a fresh delivery id: "dlv_" and 16 random
// base32 characters.
func newDeliveryID() string { return "dlv_" + randomID(16) }
