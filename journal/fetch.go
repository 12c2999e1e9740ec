package journal

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// FetchRecord is one entity of the initial fetch, with its card.
type FetchRecord struct {
	Kind Kind          `json:"kind"`
	Type string        `json:"type"`
	ID   string        `json:"id"`
	Card *store.Record `json:"card"`
}

// FetchPage is one page of a session's initial fetch. Next, when not
// nil, is the after of the next page.
type FetchPage struct {
	Records []FetchRecord `json:"records"`
	Next    *string       `json:"next"`
}

// FetchParams select one page of an initial fetch.
type FetchParams struct {
	Space  string
	Client Client
	// Token is the session's fetch token; After the Next of the previous
	// page ("" for the first).
	Token, After string
	// Limit is the most records the page holds (default and at most the
	// page limit).
	Limit int
}

// Fetch returns a page of a session's initial fetch: every entity the
// client may read as of the session's position, by type and id (bytewise),
// each with its card as it stood at that position. Together with the
// journal read from the session's cursor it misses nothing and repeats
// nothing. A page may come back short (entities the client may not read
// are left out, and a page scans a bounded number); only a null Next ends
// the fetch.
func (s *Service) Fetch(ctx context.Context, p FetchParams) (FetchPage, error) {
	limit, err := s.checkLimit(p.Limit)
	if err != nil {
		return FetchPage{}, err
	}
	if err := p.Client.check(); err != nil {
		return FetchPage{}, err
	}
	sp, err := s.log.Space(ctx, p.Space)
	if err != nil {
		return FetchPage{}, err
	}
	cd, err := s.codec(ctx, p.Space, p.Client)
	if err != nil {
		return FetchPage{}, err
	}
	t, at, err := s.fetchPosition(cd, sp, p)
	if err != nil {
		return FetchPage{}, err
	}
	f := fetcher{s: s, sp: sp, c: p.Client, pos: t.position, limit: limit, at: at}
	if err := f.run(ctx); err != nil {
		return FetchPage{}, err
	}
	page := FetchPage{Records: f.out}
	if !f.done {
		next := cd.encodeAfter(f.at)
		page.Next = &next
	}
	s.observe(Event{Kind: "fetch", Space: p.Space, Records: len(f.out)})
	return page, nil
}

// fetchPosition decodes and checks a fetch token and its after.
func (s *Service) fetchPosition(cd codec, sp store.Space, p FetchParams) (fetchToken, fetchAfter, error) {
	if p.Token == "" {
		return fetchToken{}, fetchAfter{}, problem.Param("token", "required: the fetchToken of a session")
	}
	t, err := cd.decodeFetch(p.Token)
	if err != nil {
		return fetchToken{}, fetchAfter{}, problem.Param("token", "not a fetch token of this user and application in space %q (damaged, or issued to another user, application or space)", sp.ID)
	}
	if err := s.check(t.stamp, sp, p.Client.Reader, "fetch token"); err != nil {
		return fetchToken{}, fetchAfter{}, err
	}
	at := fetchAfter{session: t.session}
	if p.After != "" {
		a, err := cd.decodeAfter(p.After)
		if err != nil || a.session != t.session {
			return fetchToken{}, fetchAfter{}, problem.Param("after", "not the next of a page of this fetch")
		}
		at = a
	}
	switch {
	case t.position > sp.Head:
		return fetchToken{}, fetchAfter{}, problem.Param("token", "the fetch position %d is beyond the head %d", t.position, sp.Head)
	case t.position < sp.Horizon:
		return fetchToken{}, fetchAfter{}, pruned("fetch", t.position, sp)
	}
	return t, at, nil
}

// fetcher assembles one fetch page.
type fetcher struct {
	s     *Service
	sp    store.Space
	c     Client
	pos   int64
	limit int
	at    fetchAfter
	out   []FetchRecord
	done  bool
}

// run scans types in order from the after position until the page is
// full, every type is exhausted or the scan budget is spent.
func (f *fetcher) run(ctx context.Context) error {
	f.out = []FetchRecord{}
	if f.pos == 0 { // nothing existed before the first commit
		f.done = true
		return nil
	}
	if f.at.typ == "" {
		if err := f.nextType(ctx); err != nil || f.done {
			return err
		}
	}
	for scanned := 0; len(f.out) < f.limit && scanned < f.s.opts.ScanBudget; {
		chunk := min(max(f.limit-len(f.out), 100), 1000)
		page, err := f.s.log.List(ctx, changelog.ListParams{Space: f.sp.ID, Type: f.at.typ, After: f.at.id, Head: f.pos, Limit: chunk, Allow: f.c.Reader.CanReadRecord})
		var hu *changelog.HistoryUnavailableError
		if errors.As(err, &hu) {
			return pruned("fetch", f.pos, store.Space{ID: f.sp.ID, Horizon: hu.Horizon})
		}
		if err != nil {
			return fmt.Errorf("initial fetch: %w", err)
		}
		scanned += chunk
		if done, err := f.add(ctx, page); err != nil || done {
			return err
		}
	}
	return nil
}

// add takes a list page's records, up to the limit, and moves the
// position past what it took; it reports when the fetch is over.
func (f *fetcher) add(ctx context.Context, page changelog.ListPage) (bool, error) {
	room := f.limit - len(f.out)
	items := page.Items
	if len(items) > room {
		items = items[:room]
	}
	for i := range items {
		f.out = append(f.out, FetchRecord{Kind: Object, Type: items[i].Type, ID: items[i].ID, Card: &items[i]})
	}
	switch {
	case len(page.Items) > room:
		f.at.id = items[len(items)-1].ID
		return false, nil
	case page.Next != "":
		f.at.id = page.Next
		return false, nil
	}
	if err := f.nextType(ctx); err != nil {
		return false, err
	}
	return f.done, nil
}

// nextType moves to the first id of the type after the current one: the
// next of the client's type allow-list, or of the types the space holds.
func (f *fetcher) nextType(ctx context.Context) error {
	f.at.id = ""
	if len(f.c.Types) > 0 {
		types := slices.Sorted(slices.Values(f.c.Types))
		i, _ := slices.BinarySearch(types, f.at.typ)
		for i < len(types) && types[i] <= f.at.typ {
			i++
		}
		if i == len(types) {
			f.done = true
			return nil
		}
		f.at.typ = types[i]
		return nil
	}
	typ, err := f.s.st.EntityTypeAfter(ctx, f.sp.ID, f.at.typ)
	if errors.Is(err, store.ErrNotFound) {
		f.done = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("initial fetch: %w", err)
	}
	f.at.typ = typ
	return nil
}
