package client

import (
	"context"
	"iter"
	"net/url"
	"strconv"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// Row is the wire row changes, history and watch carry: {seq, ts,
// actor, op, entityId, type, payload}, and nothing else.
type Row = store.Row

// Commit is a whole commit of the raw log: the wire row, its changes,
// receipt and provenance.
type Commit = store.Commit

// Change is one entity change inside a Commit, with immutable before
// and after snapshots.
type Change = store.Change

// Provenance is a commit's structured origin (raw log only).
type Provenance = store.Provenance

// PullPage is one page of the raw log: {commits, nextCursor, hasMore}.
type PullPage = changelog.PullPage

// Filter selects rows of changes, history and watch. Empty fields do not
// constrain. EntityType and EntityID go together.
type Filter struct {
	Types, Ops, Actors                      []string
	ExcludeTypes, ExcludeOps, ExcludeActors []string
	// Q is free text over type, entity id, actor and payload.
	Q string
	// EntityType and EntityID select the rows of one entity.
	EntityType, EntityID string
	// When is a CEL expression over row, the language triggers use.
	When string
}

// set adds f's parameters to q (each list value as a repeat).
func (f Filter) set(q url.Values) {
	lists := []struct {
		name string
		vals []string
	}{
		{"types", f.Types}, {"ops", f.Ops}, {"actors", f.Actors},
		{"excludeTypes", f.ExcludeTypes}, {"excludeOps", f.ExcludeOps}, {"excludeActors", f.ExcludeActors},
	}
	for _, l := range lists {
		for _, v := range l.vals {
			q.Add(l.name, v)
		}
	}
	for name, v := range map[string]string{"q": f.Q, "entityType": f.EntityType, "entityId": f.EntityID, "when": f.When} {
		if v != "" {
			q.Set(name, v)
		}
	}
}

// ChangesParams select a forward page.
type ChangesParams struct {
	// From is the position to read after (exclusive; 0 is the
	// beginning); negative reads from the horizon.
	From   int64
	Limit  int
	Filter Filter
}

// ForwardPage is a forward page of rows, oldest first. Cursor is the
// From of the next page; it moves past rows consumed but not shown
// (filtered out, unreadable), so a short page, even an empty one, is not
// the end: only Cursor == head is.
type ForwardPage struct {
	Changes []Row `json:"changes"`
	Cursor  int64 `json:"cursor"`
}

// Changes reads one forward page (GET .../changes?from=N).
func (s *Space) Changes(ctx context.Context, p ChangesParams) (ForwardPage, error) {
	q := url.Values{}
	if p.From >= 0 {
		q.Set("from", strconv.FormatInt(p.From, 10))
	}
	setLimit(q, p.Limit)
	p.Filter.set(q)
	cl := get(s.path("changes"), q)
	cl.from = max(p.From, -1)
	var page ForwardPage
	_, err := s.c.callJSON(ctx, cl, &page)
	return page, err
}

// ChangesPages reads forward from p.From page by page until it reaches
// the head the space had when the walk began.
func (s *Space) ChangesPages(ctx context.Context, p ChangesParams) iter.Seq2[ForwardPage, error] {
	return func(yield func(ForwardPage, error) bool) {
		sp, err := s.Info(ctx)
		if err != nil {
			yield(ForwardPage{}, err)
			return
		}
		for {
			page, err := s.Changes(ctx, p)
			if !yield(page, err) || err != nil || page.Cursor >= sp.Head {
				return
			}
			p.From = page.Cursor
		}
	}
}

// HistoryParams select a backward page.
type HistoryParams struct {
	// Before reads the rows with seq < Before, newest first; 0 starts at
	// the head.
	Before int64
	Limit  int
	Filter Filter
}

// HistoryPage is a backward page of rows, newest first. Cursor is the
// oldest seq the page consumed, the Before of the next page; it is nil
// when the walk reached the horizon.
type HistoryPage struct {
	Changes []Row  `json:"changes"`
	Cursor  *int64 `json:"cursor,omitempty"`
}

// Exhausted reports that no older rows remain.
func (p HistoryPage) Exhausted() bool { return p.Cursor == nil }

// History reads one backward page (GET .../changes?before=N).
func (s *Space) History(ctx context.Context, p HistoryParams) (HistoryPage, error) {
	q := url.Values{"before": {strconv.FormatInt(max(p.Before, 0), 10)}}
	setLimit(q, p.Limit)
	p.Filter.set(q)
	cl := get(s.path("changes"), q)
	cl.from = p.Before
	var page HistoryPage
	_, err := s.c.callJSON(ctx, cl, &page)
	return page, err
}

// HistoryPages pages backward from p.Before until the history is
// exhausted.
func (s *Space) HistoryPages(ctx context.Context, p HistoryParams) iter.Seq2[HistoryPage, error] {
	return func(yield func(HistoryPage, error) bool) {
		for {
			page, err := s.History(ctx, p)
			if !yield(page, err) || err != nil || page.Exhausted() {
				return
			}
			p.Before = *page.Cursor
			if p.Before <= 0 {
				return // a cursor of 0 would restart at the head
			}
		}
	}
}

// PullParams select a page of the raw log.
type PullParams struct {
	// After is the position to read after; negative reads from the
	// horizon.
	After int64
	// Limit is a soft budget in changes: the first commit is always
	// whole.
	Limit int
}

// Pull reads one page of whole commits with their changes, receipts
// and provenance (GET .../log; admin or scope log:read). Apply each
// commit whole and store NextCursor with it.
func (s *Space) Pull(ctx context.Context, p PullParams) (PullPage, error) {
	q := url.Values{}
	if p.After >= 0 {
		q.Set("after", strconv.FormatInt(p.After, 10))
	}
	setLimit(q, p.Limit)
	cl := get(s.path("log"), q)
	cl.from = max(p.After, -1)
	var page PullPage
	_, err := s.c.callJSON(ctx, cl, &page)
	return page, err
}

// PullPages pulls page after page until HasMore is false.
func (s *Space) PullPages(ctx context.Context, p PullParams) iter.Seq2[PullPage, error] {
	return func(yield func(PullPage, error) bool) {
		for {
			page, err := s.Pull(ctx, p)
			if !yield(page, err) || err != nil || !page.HasMore {
				return
			}
			p.After = page.NextCursor
		}
	}
}
