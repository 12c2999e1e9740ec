package triggers

import (
	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/store"
)

// The one judge. Every caller that decides a trigger's stance on a row
// (the engine's evaluator, the stances answer, backtests and dry runs)
// calls Judge, so they cannot disagree. The order of the checks is:
//
//  1. What the trigger's progress recorded, when the caller has it (the
//     stances answer): a delivery (matched), a cron trigger
//     (not_matched), the cursor (pending), the start (not_started), a
//     skipped range (disabled), a recorded error (error).
//  2. The prefilter: types, ops (engine ops only when named), actors and
//     excludeActors (not_matched).
//  3. Echo: a row authored by the trigger's own delivery (echo, unless
//     the trigger sets echo).
//  4. `when` on SubjectOf(row) (matched, not_matched or error).
//
// A row matched live that has no delivery was coalesced: a later match
// of the same entity in the same batch (Coalesce) was delivered instead.

// Progress is what a trigger's stored state says about one row: the
// stances answer derives a stance from it before judging the row again.
type Progress struct {
	// Known reports that the trigger has a stored state.
	Known bool
	// Cursor, Start and Skipped come from the trigger's state.
	Cursor, Start int64
	Skipped       []store.SeqRange
	// Delivered reports that the row has a delivery of the trigger.
	Delivered bool
	// Error is the error recorded for the row ("" when none).
	Error string
}

// Context is what Judge needs besides the trigger and the row. The zero
// Context judges the row live, as the evaluator does when it reaches it.
type Context struct {
	// Progress, when set, is the trigger's stored progress: stage 1 of
	// the judge applies.
	Progress *Progress
	// Match, when set, is an Index's answer on the row for this trigger
	// (stages 2 and 4 already done): Result{Stance: StanceNotMatched}
	// when the index left the trigger out of its answer. Nil: Judge runs
	// the prefilter and `when` itself.
	Match *Result
}

// Verdict is a trigger's stance on a row; Err is set with StanceError.
type Verdict struct {
	Stance Stance
	Err    error
}

// ErrorText returns the verdict's error as recorded ("" when none).
func (v Verdict) ErrorText() string {
	switch {
	case v.Stance != StanceError:
		return ""
	case v.Err == nil:
		return "error"
	}
	return v.Err.Error()
}

// Judge returns t's stance on the commit c (see the order above).
func Judge(t *Trigger, c *store.Commit, cx Context) Verdict {
	if p := cx.Progress; p != nil {
		if v, ok := recorded(t, c.Seq, p); ok {
			return v
		}
	}
	if t.Source.Changes == nil {
		return Verdict{Stance: StanceNotMatched}
	}
	if cx.Match == nil && !Admits(t.Source.Changes, &c.Row) {
		return Verdict{Stance: StanceNotMatched}
	}
	if IsEcho(t, &c.Row) {
		return Verdict{Stance: StanceEcho}
	}
	v := live(t, c, cx.Match)
	if cx.Progress != nil && v.Stance == StanceMatched {
		v.Stance = StanceCoalesced // judged, matched, yet no delivery
	}
	return v
}

// recorded applies stage 1: what the stored progress decides.
func recorded(t *Trigger, seq int64, p *Progress) (Verdict, bool) {
	switch {
	case p.Delivered:
		return Verdict{Stance: StanceMatched}, true
	case t.Source.Cron != nil:
		return Verdict{Stance: StanceNotMatched}, true
	case !p.Known || seq > p.Cursor:
		return Verdict{Stance: StancePending}, true
	case seq <= p.Start:
		return Verdict{Stance: StanceNotStarted}, true
	case inRanges(p.Skipped, seq):
		return Verdict{Stance: StanceDisabled}, true
	case p.Error != "":
		return Verdict{Stance: StanceError, Err: errorText(p.Error)}, true
	}
	return Verdict{}, false
}

// live returns the verdict of `when` (or of the index's answer m).
func live(t *Trigger, c *store.Commit, m *Result) Verdict {
	if m != nil {
		return Verdict{Stance: m.Stance, Err: m.Err}
	}
	src := t.Source.Changes
	prg := src.Program()
	if prg == nil && src.When != "" {
		var err error
		if prg, err = Compile("source.changes.when", src.When); err != nil {
			return Verdict{Stance: StanceError, Err: err}
		}
	}
	if prg == nil {
		return Verdict{Stance: StanceMatched}
	}
	out, err := prg.Eval(SubjectOf(c))
	if err != nil {
		return Verdict{Stance: StanceError, Err: err}
	}
	return Verdict(out)
}

// Admits applies a change source's prefilter to a row: its types, ops
// (engine ops only when named), actors and excludeActors. The Index
// applies the same lists through maps.
func Admits(src *ChangeSource, r *store.Row) bool {
	switch {
	case len(src.Types) > 0 && !contains(src.Types, r.Type):
		return false
	case len(src.Ops) == 0 && IsEngineOp(r.Op):
		return false
	case len(src.Ops) > 0 && !contains(src.Ops, r.Op):
		return false
	case len(src.Actors) > 0 && !contains(src.Actors, r.Actor):
		return false
	}
	return !contains(src.ExcludeActors, r.Actor)
}

// IsEcho reports a row authored by t's own delivery, which t does not
// see unless it sets echo.
func IsEcho(t *Trigger, r *store.Row) bool {
	return !t.Echo && r.Actor == causality.Actor(t.Name)
}

// SubjectOf returns the CEL input of a commit: the row and its primary
// entity's after and before snapshots.
func SubjectOf(c *store.Commit) Subject {
	in := Subject{Row: &c.Row}
	if ch := PrimaryChange(c); ch != nil {
		in.Entity, in.Before = ch.After, ch.Before
	}
	return in
}

// SubjectOfRaw is SubjectOf for a commit as stored: its changes are read
// only when a program reads entity or before (a row judged on `row`
// alone, or left out by the prefilter and guards, never reads them),
// and then only for the primary change's snapshots (stored.go), which
// give the values SubjectOf gives for the decoded commit. Changes that
// do not decode make entity and before errors wrapping ErrBadInput.
func SubjectOfRaw(c *store.RawCommit) Subject { return Subject{Row: &c.Row, raw: c} }

// PrimaryChange returns the change of the commit's primary entity (the
// row's type and id), else its first change; nil when it has none.
func PrimaryChange(c *store.Commit) *store.Change { return primaryChange(&c.Row, c.Changes) }

// primaryChange is PrimaryChange over a row and its commit's changes.
func primaryChange(r *store.Row, changes []store.Change) *store.Change {
	i := primaryIndex(r, len(changes), func(i int, typ, id string) bool {
		return changes[i].Type == typ && changes[i].ID == id
	})
	if i < 0 {
		return nil
	}
	return &changes[i]
}

// primaryIndex returns the index of the primary change among a commit's
// n changes: the first of the row's entity (is reports whether change i
// has the type and id), else the first; -1 when there are none.
func primaryIndex(r *store.Row, n int, is func(i int, typ, id string) bool) int {
	for i := range n {
		if is(i, r.Type, r.EntityID) {
			return i
		}
	}
	if n > 0 {
		return 0
	}
	return -1
}

// Coalescer applies coalescing to one batch of matched rows: with
// coalesce, only the last match of each entity in the batch is
// delivered, in the slot of the entity's first match. Batches are what
// the evaluator judges in one transaction (BatchRows changes by
// default); a backtest pages the same way, so both coalesce over the
// same rows when a lone trigger catches up.
type Coalescer struct {
	slots map[store.EntityKey]int
}

// BatchRows is the change budget of one evaluation batch (the engine's
// default) and of one backtest page.
const BatchRows = 1000

// Slot returns where a match of key goes among the batch's deliveries:
// the slot of the entity's earlier match, which it replaces (replaced
// true), or next.
func (co *Coalescer) Slot(key store.EntityKey, next int) (slot int, replaced bool) {
	if co.slots == nil {
		co.slots = map[store.EntityKey]int{}
	}
	if slot, ok := co.slots[key]; ok {
		return slot, true
	}
	co.slots[key] = next
	return next, false
}

func inRanges(rs []store.SeqRange, seq int64) bool {
	for _, r := range rs {
		if seq >= r.Lo && seq <= r.Hi {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// recordedError is an error read back from a stored stance error.
type recordedError string

func (e recordedError) Error() string { return string(e) }

func errorText(s string) error { return recordedError(s) }
