package journal

import (
	"context"
	"fmt"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Page is one journal page.
type Page struct {
	Records    []Record `json:"records"`
	NextCursor string   `json:"nextCursor"`
	// HasMore says whether settled records remain after NextCursor; a
	// short page is not the end, only HasMore false is.
	HasMore bool `json:"hasMore"`
	// SettledSeq is how far the log was settled when the page was read.
	SettledSeq      int64     `json:"settledSeq"`
	CursorExpiresAt time.Time `json:"cursorExpiresAt"`
	Warnings        []Warning `json:"warnings"`
}

// ReadParams select one journal page.
type ReadParams struct {
	Space  string
	Client Client
	Cursor string
	// Limit is the most records the page holds (default and at most the
	// page limit); warnings do not count.
	Limit int
}

// checkLimit applies the limit's default and range.
func (s *Service) checkLimit(n int) (int, error) {
	switch {
	case n == 0:
		return s.opts.PageLimit, nil
	case n < 1 || n > s.opts.PageLimit:
		return 0, problem.Param("limit", "want 1 to %d, got %d", s.opts.PageLimit, n)
	}
	return n, nil
}

// Read returns the page after a cursor: the records of the settled
// commits after it, described for the client (Describe), at most Limit
// of them. The cursor it hands back has moved over exactly what the page
// walked, so reading the same cursor again answers the same records.
func (s *Service) Read(ctx context.Context, p ReadParams) (Page, error) {
	limit, err := s.checkLimit(p.Limit)
	if err != nil {
		return Page{}, err
	}
	if err := p.Client.check(); err != nil {
		return Page{}, err
	}
	sp, cd, cur, err := s.position(ctx, p.Space, p.Client, p.Cursor)
	if err != nil {
		return Page{}, err
	}
	now := s.now()
	settled, err := s.settled(ctx, sp, now)
	if err != nil {
		return Page{}, err
	}
	w := walker{s: s, sp: sp, r: p.Client.Reader, limit: limit, settled: settled, pos: cur,
		page: Page{Records: []Record{}, Warnings: []Warning{}, SettledSeq: settled, CursorExpiresAt: cur.expires}}
	if err := w.walk(ctx); err != nil {
		return Page{}, err
	}
	w.page.NextCursor = cd.encodeCursor(w.pos)
	w.page.HasMore = w.pos.seq < settled || w.pos.skip > 0
	s.observePage(p.Space, &w.page, w.newest, now)
	return w.page, nil
}

// position decodes and checks a cursor.
func (s *Service) position(ctx context.Context, space string, c Client, raw string) (store.Space, codec, cursor, error) {
	if raw == "" {
		return store.Space{}, codec{}, cursor{}, problem.Param("cursor", "required: the cursor of a session or of the last page")
	}
	sp, err := s.log.Space(ctx, space)
	if err != nil {
		return store.Space{}, codec{}, cursor{}, err
	}
	cd, err := s.codec(ctx, space, c)
	if err != nil {
		return store.Space{}, codec{}, cursor{}, err
	}
	cur, err := cd.decodeCursor(raw)
	if err != nil {
		return store.Space{}, codec{}, cursor{}, problem.New(problem.CursorInvalid,
			"not a journal cursor of this user and application in space %q (damaged, or issued to another user, application or space)", space)
	}
	if err := s.check(cur.stamp, sp, c.Reader, "cursor"); err != nil {
		return store.Space{}, codec{}, cursor{}, err
	}
	switch {
	case cur.seq > sp.Head:
		return store.Space{}, codec{}, cursor{}, problem.New(problem.CursorInvalid, "the cursor's position %d is beyond the head %d of space %q", cur.seq, sp.Head, space)
	case cur.seq < sp.Horizon:
		return store.Space{}, codec{}, cursor{}, pruned("cursor", cur.seq, sp)
	}
	return sp, cd, cur, nil
}

func (s *Service) observePage(space string, p *Page, newest time.Time, now time.Time) {
	ev := Event{Kind: "page", Space: space, Records: len(p.Records)}
	if len(p.Warnings) > 0 {
		ev.Warnings = map[string]int{}
		for _, w := range p.Warnings {
			ev.Warnings[w.Reason]++
		}
	}
	if !newest.IsZero() {
		ev.Lag = now.Sub(newest)
	}
	s.observe(ev)
}

// walker assembles one page.
type walker struct {
	s       *Service
	sp      store.Space
	r       Reader
	limit   int
	settled int64
	pos     cursor
	page    Page
	full    bool
	scanned int
	newest  time.Time // ts of the newest commit walked
}

// walk reads settled commits after the position in growing chunks until
// the page is full, the settled tail is reached or the scan budget is
// spent.
func (w *walker) walk(ctx context.Context) error {
	chunk := min(w.limit+1, 1000)
	for !w.full && w.pos.seq < w.settled && w.scanned < w.s.opts.ScanBudget {
		n := int(min(int64(chunk), w.settled-w.pos.seq, int64(w.s.opts.ScanBudget-w.scanned)))
		commits, err := w.s.readCommits(ctx, w.sp, w.pos.seq, n)
		if err != nil {
			return err
		}
		for i := range commits {
			if w.take(&commits[i]); w.full {
				break
			}
		}
		chunk = min(chunk*2, 1000)
	}
	return nil
}

// take walks one commit from the position's skip on; when the page fills
// up inside it, the position stays before the first record left out.
func (w *walker) take(c *store.Commit) {
	entries := Describe(c, w.r)
	for i := w.pos.skip; i < len(entries); i++ {
		e := entries[i]
		if e.Warning != nil {
			w.page.Warnings = append(w.page.Warnings, *e.Warning)
			continue
		}
		if len(w.page.Records) == w.limit {
			w.full, w.pos.skip = true, i
			return
		}
		w.page.Records = append(w.page.Records, *e.Record)
	}
	w.pos.seq, w.pos.skip = c.Seq, 0
	w.scanned++
	w.newest = c.TS
}

// readCommits reads n whole commits after seq, checking that none of them
// was pruned away meanwhile.
func (s *Service) readCommits(ctx context.Context, sp store.Space, seq int64, n int) ([]store.Commit, error) {
	commits, err := s.st.Commits(ctx, store.CommitsParams{Space: sp.ID, After: seq, Limit: n, NoReceipts: true})
	if err != nil {
		return nil, fmt.Errorf("read commits: %w", err)
	}
	if len(commits) > 0 && commits[0].Seq == seq+1 {
		return commits, nil
	}
	now, err := s.log.Space(ctx, sp.ID)
	if err != nil {
		return nil, err
	}
	if seq < now.Horizon {
		return nil, pruned("cursor", seq, now)
	}
	return nil, fmt.Errorf("read commits of %s after %d: missing below head %d", sp.ID, seq, now.Head)
}
