package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// Stances returns every trigger's stance on the row seq, derived from the
// trigger's cursor, start, skipped ranges, recorded errors and
// deliveries, and (for rows it judged without a delivery) its filter:
// not_matched, echo, or coalesced.
func (e *Engine) Stances(ctx context.Context, space string, seq int64) (Stances, error) {
	sp, err := e.log.Space(ctx, space)
	if err != nil {
		return Stances{}, err
	}
	if seq < 1 || seq > sp.Head {
		return Stances{}, problem.New(problem.NotFound, "row %d not found: the head is %d", seq, sp.Head).With("head", sp.Head)
	}
	c, err := e.log.Commit(ctx, space, seq)
	var gone *changelog.HistoryUnavailableError
	if errors.As(err, &gone) {
		return Stances{}, problem.New(problem.Compacted, "row %d was pruned; the horizon is %d", seq, gone.Horizon).With("horizon", gone.Horizon)
	}
	if err != nil {
		return Stances{}, err
	}
	in, err := e.stanceInputs(ctx, space, seq)
	if err != nil {
		return Stances{}, err
	}
	out := Stances{Seq: seq, Stances: []Stance{}}
	for _, t := range in.triggers {
		out.Stances = append(out.Stances, in.judge(t, &c))
	}
	return out, nil
}

// stanceInputs is what stances are derived from.
type stanceInputs struct {
	triggers   []*triggers.Trigger
	states     map[string]store.TriggerState
	deliveries map[string]store.Delivery
	errors     map[string]string
}

func (e *Engine) stanceInputs(ctx context.Context, space string, seq int64) (*stanceInputs, error) {
	cat, err := e.catalog(ctx, space)
	if err != nil {
		return nil, err
	}
	states, err := e.st.TriggerStateList(ctx, space)
	if err != nil {
		return nil, fmt.Errorf("trigger states: %w", err)
	}
	ds, err := e.st.DeliveriesAt(ctx, space, seq)
	if err != nil {
		return nil, fmt.Errorf("deliveries of %d: %w", seq, err)
	}
	errs, err := e.st.StanceErrorsAt(ctx, space, seq)
	if err != nil {
		return nil, fmt.Errorf("errors of %d: %w", seq, err)
	}
	in := &stanceInputs{states: map[string]store.TriggerState{}, deliveries: map[string]store.Delivery{}, errors: errs}
	for _, s := range states {
		in.states[s.Trigger] = s
	}
	for _, d := range ds {
		in.deliveries[d.Trigger] = d // ordered by creation: the latest wins
	}
	for _, t := range cat.triggers {
		in.triggers = append(in.triggers, t)
	}
	slices.SortFunc(in.triggers, func(a, b *triggers.Trigger) int { return strings.Compare(a.Name, b.Name) })
	return in, nil
}

// judge derives one trigger's stance on c.
func (in *stanceInputs) judge(t *triggers.Trigger, c *store.Commit) Stance {
	s := Stance{Trigger: t.Name}
	if d, ok := in.deliveries[t.Name]; ok {
		s.Stance = triggers.StanceMatched.String()
		s.Delivery = &StanceDelivery{ID: d.ID, Status: d.Status, Attempts: d.Attempts}
		return s
	}
	st, ok := in.states[t.Name]
	switch {
	case t.Source.Cron != nil:
		s.Stance = triggers.StanceNotMatched.String()
	case !ok || c.Seq > st.Cursor:
		s.Stance = triggers.StancePending.String()
	case c.Seq <= st.Start:
		s.Stance = triggers.StanceNotStarted.String()
	case skipped(st.Skipped, c.Seq):
		s.Stance = triggers.StanceDisabled.String()
	case in.errors[t.Name] != "":
		s.Stance, s.Error = triggers.StanceError.String(), in.errors[t.Name]
	default:
		s.Stance = refilter(t, c).String()
	}
	return s
}

// refilter judges a row the trigger evaluated without a delivery or a
// recorded error: echo, not_matched, or (matching now) coalesced.
func refilter(t *triggers.Trigger, c *store.Commit) triggers.Stance {
	if isEcho(t, c) {
		return triggers.StanceEcho
	}
	res := triggers.NewIndex([]*triggers.Trigger{t}).Match(inputOf(c))
	if len(res) == 0 || res[0].Stance != triggers.StanceMatched {
		return triggers.StanceNotMatched
	}
	return triggers.StanceCoalesced
}

func skipped(rs []store.SeqRange, seq int64) bool {
	for _, r := range rs {
		if seq >= r.Lo && seq <= r.Hi {
			return true
		}
	}
	return false
}
