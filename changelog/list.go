package changelog

import (
	"context"
	"fmt"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// List returns one page of a collection ordered by id (bytewise),
// consistent as of one head: entities changed after it are shown as the
// before image of their first later change, so paging a collection and
// then watching from Head misses nothing and double-sees nothing. A page
// may hold fewer items than Limit (entities created after the head, or
// unreadable, are left out); Next is empty exactly on the last page.
func (l *Log) List(ctx context.Context, p ListParams) (ListPage, error) {
	if p.Limit < 1 {
		return ListPage{}, problem.Param("limit", "must be at least 1, got %d", p.Limit)
	}
	sp, err := l.SpaceOf(ctx, p.Space, p.Known)
	if err != nil {
		return ListPage{}, err
	}
	head := p.Head
	if head == 0 {
		head = sp.Head
	}
	if head > sp.Head {
		return ListPage{}, problem.Param("after", "snapshot %d is ahead of the head %d", head, sp.Head)
	}
	if head < sp.Horizon {
		return ListPage{}, &HistoryUnavailableError{Space: p.Space, Requested: head, Horizon: sp.Horizon}
	}
	// One record more than the page tells whether another page follows.
	recs, err := l.st.EntityList(ctx, store.EntityListParams{Space: p.Space, Type: p.Type, After: p.After, AsOf: head, Limit: p.Limit + 1})
	if err != nil {
		return ListPage{}, fmt.Errorf("list entities: %w", err)
	}
	more := len(recs) > p.Limit
	recs = recs[:min(len(recs), p.Limit)]
	items, err := l.asOf(ctx, p.Space, head, recs)
	if err != nil {
		return ListPage{}, err
	}
	page := ListPage{Items: make([]store.Record, 0, len(items)), Head: head}
	for i := range items {
		if p.Allow == nil || p.Allow(&items[i]) {
			page.Items = append(page.Items, items[i])
		}
	}
	if more {
		page.Next = recs[len(recs)-1].ID
	}
	return page, nil
}

// asOf turns current records into their state at head: records changed
// after head are replaced by the before image of their first later change
// (dropped when they did not exist at head).
func (l *Log) asOf(ctx context.Context, space string, head int64, recs []store.Record) ([]store.Record, error) {
	var later []store.EntityKey
	for i := range recs {
		if recs[i].Version > head {
			later = append(later, recs[i].Key())
		}
	}
	var firsts map[store.EntityKey]store.Change
	if len(later) > 0 {
		var err error
		firsts, err = l.st.FirstChangesAfter(ctx, space, head, later)
		if err != nil {
			return nil, fmt.Errorf("reconstruct as of %d: %w", head, err)
		}
		if err := l.checkHorizon(ctx, space, head); err != nil {
			return nil, err
		}
	}
	out := make([]store.Record, 0, len(recs))
	for _, r := range recs {
		if r.Version <= head {
			if r.Kind == store.KindLive {
				out = append(out, r)
			}
			continue
		}
		ch, ok := firsts[r.Key()]
		if !ok {
			return nil, fmt.Errorf("reconstruct %s/%s as of %d: no change after it", r.Type, r.ID, head)
		}
		if ch.Before != nil {
			out = append(out, *ch.Before)
		}
	}
	return out, nil
}
