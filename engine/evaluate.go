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
	"github.com/eddy-run/eddy/internal/sortid"
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
// active change triggers (up to catchUpPages batches while catching up),
// creates the deliveries and advances every cursor in one transaction.
// more reports that rows remain.
func (sr *spaceRun) evaluate(ctx context.Context) (more bool, err error) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	active := sr.activeChange()
	if len(active) == 0 {
		sr.ahead.Clear() // no reader left for the pages read ahead
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
	opts := evalPull(sr.indexFor(active))
	page, err := sr.read(ctx, lo, opts)
	var gone *changelog.HistoryUnavailableError
	if errors.As(err, &gone) {
		return sr.skipPruned(ctx, active, gone.Horizon)
	}
	if err != nil {
		return false, fmt.Errorf("read after %d: %w", lo, err)
	}
	// The page goes back to the store once judged: the commits judgeRaw
	// decodes for the dispatcher own their memory.
	defer sr.e.log.RecycleRaw(page.Commits)
	if len(page.Commits) == 0 {
		return false, nil
	}
	pages, more := changelog.SplitRaw(page.Commits, sr.e.opts.Batch), page.HasMore
	if last := pages[len(pages)-1]; more && len(pages) > 1 && len(last) < sr.e.opts.Batch {
		// It may be short of a batch: read again next time. A page of
		// Batch commits is whole whatever follows (no page holds more).
		pages = pages[:len(pages)-1]
	}
	end := lastSeq(pages[len(pages)-1])
	if more {
		sr.readAhead(ctx, end, end-lo, opts)
	}
	batches, matched, rows := newBatches(active), map[int64]*store.Commit{}, 0
	spent := map[int64]causality.Spent{}
	for i, p := range pages {
		if i > 0 && pendingOf(batches) >= sr.e.opts.Batch {
			more = true
			break
		}
		nb, nm, err := sr.judgeRaw(active, p)
		if err != nil && i == 0 {
			return false, fmt.Errorf("judge after %d: %w", lo, err)
		}
		if err == nil {
			err = sr.decide(ctx, sr.storedCounts, nb, spent)
		}
		if err != nil {
			more = true
			break
		}
		merge(batches, nb)
		maps.Copy(matched, nm)
		end, rows = lastSeq(p), rows+len(p)
	}
	span.SetAttributes(attribute.Int64("eddy.through", end), attribute.Int("eddy.rows", rows))
	if err := sr.commit(ctx, batches, end); err != nil {
		return false, err
	}
	sr.finish(batches, matched, time.Since(started), rows)
	return more, nil
}

// catchUpPages bounds the batches one evaluation judges while it catches
// up: it reads up to catchUpPages batches of rows in one page and cuts it
// into batches as Batch-sized pages would be cut (changelog.SplitRaw).
// Each batch is judged, coalesced and capped on its own, as a backtest
// pages; their deliveries, errors and cursor moves share one
// transaction, so a catch-up pays one read and one commit for up to
// catchUpPages batches (fewer once Batch deliveries and errors wait).
// A space catching up holds three reads (the one judged and the
// aheadDepth read ahead) of up to 16 batches of the default 1,000 rows:
// about 22 MB when every row is read whole at ~470 bytes (a one-put
// commit without its receipt), a fifth of that when most rows are of
// types no trigger names (evalPull). 16 instead of 8 made a catch-up on
// PostgreSQL about 18% faster (half the reads and commits).
const catchUpPages = 16

// lastSeq returns the seq of a page's last commit.
func lastSeq(cs []store.RawCommit) int64 { return cs[len(cs)-1].Seq }

// pendingOf counts the deliveries and errors the batches would write.
func pendingOf(batches map[string]*batch) int {
	n := 0
	for _, b := range batches {
		n += len(b.deliveries) + len(b.failures)
	}
	return n
}

// merge adds the work of the next page's batches to batches, trigger by
// trigger; both were judged from the same cursors.
func merge(batches, next map[string]*batch) {
	for name, nb := range next {
		b := batches[name]
		b.deliveries = append(b.deliveries, nb.deliveries...)
		b.failures = append(b.failures, nb.failures...)
		b.parks = append(b.parks, nb.parks...)
		b.budgetParks = append(b.budgetParks, nb.budgetParks...)
		maps.Copy(b.causes, nb.causes)
	}
}

// aheadKey is what a page is read ahead for: its start and options.
type aheadKey struct {
	after int64
	opts  changelog.PullOptions
}

// sameAhead reports whether a page read for a answers a read for b (the
// active triggers may have changed since: a page read for fewer types
// would lack changes now needed).
func sameAhead(a, b aheadKey) bool {
	return a.after == b.after && sameTypes(a.opts.ChangesOf, b.opts.ChangesOf)
}

// aheadDepth is how many pages a catch-up reads ahead: the next one and,
// where the page just read was as long as its window (so the next one
// ends where it started plus that step), the one after it. The two
// reads run at once: on PostgreSQL on two connections, so the server
// serves the second page on the other core while eddy reads the first
// and judges the current one. With one page ahead, a catch-up on
// PostgreSQL waited on the server's page reads, which take longer than
// judging them.
const aheadDepth = 2

// read returns the page after the position, from the read-ahead when it
// read that position with the same options. Pages read ahead of the one
// taken stay; a read that finds none drops them all.
func (sr *spaceRun) read(ctx context.Context, after int64, opts changelog.PullOptions) (changelog.RawPullPage, error) {
	if r := sr.ahead.Take(aheadKey{after, opts}); r == nil {
		sr.ahead.Clear()
	} else if page, err := r.Wait(); err == nil {
		return page, nil
	}
	return sr.pull(ctx, aheadKey{after, opts})
}

// pull reads the page of a catch-up at k.
func (sr *spaceRun) pull(ctx context.Context, k aheadKey) (changelog.RawPullPage, error) {
	return sr.e.log.PullRawWith(ctx, sr.id, k.after, sr.e.opts.Batch*catchUpPages, k.opts)
}

// evalPull returns what the evaluator reads for the triggers of idx: no
// receipts, and the changes and provenance only of rows of the types
// that have candidates (Index.Types), since no other row matches. The
// evaluator decodes only the commits it must (judgeRaw).
func evalPull(idx *triggers.Index) changelog.PullOptions {
	opts := changelog.PullOptions{NoReceipts: true, Recycle: true}
	if types, all := idx.Types(); !all {
		opts.ChangesOf = types
	}
	return opts
}

// sameTypes reports whether two ChangesOf read the same changes.
func sameTypes(a, b []string) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }

// readAhead starts reading the aheadDepth pages after the position (the
// end of the page being judged, step after its start), keeping the
// reads already under way at the same positions. The second is read
// only when the page was whole, so that its start is known.
func (sr *spaceRun) readAhead(ctx context.Context, after, step int64, opts changelog.PullOptions) {
	keys := []aheadKey{{after, opts}}
	if step == int64(sr.e.opts.Batch*catchUpPages) {
		for len(keys) < aheadDepth {
			keys = append(keys, aheadKey{keys[len(keys)-1].after + step, opts})
		}
	}
	sr.ahead.Fill(keys, func(k aheadKey) (changelog.RawPullPage, error) { return sr.pull(ctx, k) }, sr.wg.Go)
}

// judgeInto judges decoded rows for the triggers of out (the index may
// hold more) and builds each batch's deliveries and failures (the caller
// then decides them, as planInCommit does), charging every candidate to
// budget (nil: unbounded). ok false: the budget ran out and out is
// incomplete.
func (sr *spaceRun) judgeInto(idx *triggers.Index, out map[string]*batch, commits []store.Commit, budget *triggers.Budget) (ok bool) {
	now := sr.e.now()
	for i := range commits {
		rs, ok := idx.MatchWithin(triggers.SubjectOf(&commits[i]), budget)
		if !ok {
			return false
		}
		sr.judgeRow(out, rs, &commits[i], now)
	}
	return true
}

// judgeRaw runs a page as stored through the match index and builds each
// trigger's deliveries and recorded errors; the stance of every row is
// the one judge's (triggers.Judge), given the index's answer (judgeRow).
// A commit's changes are decoded only when a candidate's `when` reads
// entity or before (triggers.SubjectOfRaw), and the whole commit only when
// the index answers for it (a match or an error), to be judged and
// delivered. It also returns those decoded commits by seq.
func (sr *spaceRun) judgeRaw(active map[string]*trig, raws []store.RawCommit) (map[string]*batch, map[int64]*store.Commit, error) {
	idx := sr.indexFor(active)
	out := newBatches(active)
	decoded := map[int64]*store.Commit{}
	now := sr.e.now()
	for i := range raws {
		rs := idx.Match(triggers.SubjectOfRaw(&raws[i]))
		if len(rs) == 0 {
			continue
		}
		c, err := raws[i].Decode()
		if err != nil {
			return nil, nil, err
		}
		c.Row = c.Row.Clone() // the page goes back to the store (evaluate)
		decoded[c.Seq] = &c
		sr.judgeRow(out, rs, &c, now)
	}
	return out, decoded, nil
}

// newBatches returns an empty batch for each trigger.
func newBatches(ts map[string]*trig) map[string]*batch {
	out := make(map[string]*batch, len(ts))
	for name, t := range ts {
		out[name] = &batch{t: t, causes: map[string]causality.Cause{}}
	}
	return out
}

// rootCounts reads the causal budget counters of roots of the space: the
// evaluator reads the store (store.RootCountStore), the in-commit path
// its own transaction (store.RootCountTx).
type rootCounts func(ctx context.Context, roots []int64) (map[int64]store.RootCount, error)

// storedCounts reads the counters from the store.
func (sr *spaceRun) storedCounts(ctx context.Context, roots []int64) (map[int64]store.RootCount, error) {
	return sr.e.st.RootCounts(ctx, sr.id, roots)
}

// decide applies the causality limits to every delivery of the batches
// (batch.decide), trigger by trigger in name order, so which trigger's
// delivery writes a root's one budget park row never depends on map
// order. spent holds what each root has caused, shared by the pages of
// one evaluation: the counters of roots it does not hold yet are read in
// one query (read), and a budget park marks its root there, so a later
// page parks quietly.
func (sr *spaceRun) decide(ctx context.Context, read rootCounts, batches map[string]*batch, spent map[int64]causality.Spent) error {
	var roots []int64
	seen := map[int64]bool{}
	for _, b := range batches {
		for _, c := range b.causes {
			r := c.RootSeq()
			if _, known := spent[r]; !known && !seen[r] {
				seen[r] = true
				roots = append(roots, r)
			}
		}
	}
	if len(roots) > 0 {
		counts, err := read(ctx, roots)
		if err != nil {
			return fmt.Errorf("read root counts: %w", err)
		}
		for _, r := range roots {
			c := counts[r]
			spent[r] = causality.Spent{Rows: c.Rows, Parked: c.Parked}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(batches)) {
		batches[name].decide(sr.e.opts.SpaceCap, sr.e.opts.SpaceBudget, spent)
	}
	return nil
}

// judgeRow records the stance of every trigger the index answered for on
// the commit c (rs): an error, or a delivery when the one judge
// (triggers.Judge) says matched. Triggers whose cursor is past c are
// left alone.
func (sr *spaceRun) judgeRow(out map[string]*batch, rs []triggers.Result, c *store.Commit, now time.Time) {
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

// newDeliveryID returns a fresh delivery id: "dlv_", the time and 16
// random characters (80 bits, as the ids had before the time was added),
// made by sortid. Ids made later sort later, so a delivery's rows and
// index entries land at the end of their b-trees, beside the deliveries
// made with it, rather than on a random page each: a group commit of 16
// deliveries writes a few pages instead of 16, and their completions
// touch the same few.
func newDeliveryID() string { return sortid.New(deliveryPrefix, 16) }

// deliveryPrefix begins every delivery id.
const deliveryPrefix = "dlv_"
