package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// PruneLimit returns the highest seq a space may be pruned through
// without taking rows from its triggers: below every enabled change
// trigger's cursor (rows above it are not judged yet) and below every
// open delivery's causing row (its function still reads it). holders
// names the triggers that set the limit.
func (e *Engine) PruneLimit(ctx context.Context, space string) (limit int64, holders map[string]int64, err error) {
	sp, err := e.log.Space(ctx, space)
	if err != nil {
		return 0, nil, err
	}
	cat, err := e.catalog(ctx, space)
	if err != nil {
		return 0, nil, err
	}
	holders = map[string]int64{}
	limit = sp.Head
	for name, t := range cat.triggers {
		lim := sp.Head
		if t.Enabled && t.Source.Changes != nil {
			st, err := e.state(ctx, space, t)
			if err != nil {
				return 0, nil, err
			}
			lim = st.Cursor
		}
		open, err := e.st.DeliveryList(ctx, store.DeliveryListParams{Space: space, Trigger: name, Statuses: store.OpenDeliveryStatuses, Limit: 1})
		if err != nil {
			return 0, nil, fmt.Errorf("open deliveries of %s: %w", name, err)
		}
		if len(open) > 0 {
			lim = min(lim, open[0].Seq-1)
		}
		if lim < sp.Head {
			holders[name] = lim
			limit = min(limit, lim)
		}
	}
	return limit, holders, nil
}

// CheckPrune refuses (409 conflict) pruning a space through a seq its
// triggers still need (see PruneLimit); details name each trigger and how
// far it allows.
func (e *Engine) CheckPrune(ctx context.Context, space string, through int64) error {
	limit, holders, err := e.PruneLimit(ctx, space)
	if err != nil || through <= limit {
		return err
	}
	var names []string
	for name, lim := range holders {
		if lim < through {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return problem.New(problem.Conflict, "pruning through %d would take rows triggers %v have not finished with (they allow up to %d); pass force to prune anyway", through, names, limit).
		With("reason", "triggers_behind").With("limit", limit).With("triggers", names)
}
