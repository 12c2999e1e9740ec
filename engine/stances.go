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
	out := Stances{Seq: seq, Stances: []TriggerStance{}}
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

// judge derives one trigger's stance on c through the one judge, from
// the trigger's stored progress.
func (in *stanceInputs) judge(t *triggers.Trigger, c *store.Commit) TriggerStance {
	s := TriggerStance{Trigger: t.Name}
	d, delivered := in.deliveries[t.Name]
	st, known := in.states[t.Name]
	p := &triggers.Progress{Known: known, Cursor: st.Cursor, Start: st.Start, Skipped: st.Skipped,
		Delivered: delivered, Error: in.errors[t.Name]}
	v := triggers.Judge(t, c, triggers.Context{Progress: p})
	s.Stance, s.Error = v.Stance, v.ErrorText()
	if delivered {
		s.Delivery = &StanceDelivery{ID: d.ID, Status: d.Status, Attempts: d.Attempts}
	}
	return s
}
