package server

import (
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// listFilters are the filter parameters that take repeats.
var listFilters = []string{"types", "ops", "actors", "excludeTypes", "excludeOps", "excludeActors"}

// changesParams are the parameters of GET .../changes.
var changesParams = slices.Concat([]string{"from", "before", "limit", "when", "watch"}, changelog.FilterParams)

// forwardAnswer is a forward page of rows.
type forwardAnswer struct {
	Changes []store.Row `json:"changes"`
	Cursor  int64       `json:"cursor"`
}

// historyAnswer is a backward page; Cursor is omitted when the walk is
// exhausted.
type historyAnswer struct {
	Changes []store.Row `json:"changes"`
	Cursor  *int64      `json:"cursor,omitempty"`
}

// changes answers GET .../changes: forward from a seq (default: the
// horizon), with before history newest first, or with watch=1 the ndjson
// watch stream.
func (s *Server) changes(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	rd, err := s.readerFor(r, space, accessRead)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if err := checkParams(q, changesParams, listFilters); err != nil {
		return err
	}
	watching, err := watchParam(q)
	if err != nil {
		return err
	}
	if watching {
		return s.watchChanges(w, r, rd, space, q)
	}
	from, hasFrom, err := seqParam(q, "from")
	if err != nil {
		return err
	}
	before, hasBefore, err := seqParam(q, "before")
	if err != nil {
		return err
	}
	if hasFrom && hasBefore {
		return problem.Param("before", "from (forward) and before (history) cannot be combined")
	}
	limit, err := limitParam(q)
	if err != nil {
		return err
	}
	f, ev, err := s.rowFilter(r.Context(), fixedReader(rd), q)
	if err != nil {
		return err
	}
	if hasBefore {
		return s.history(w, r, space, knownSpace(rd), before, f, ev, limit)
	}
	return s.forward(w, r, space, knownSpace(rd), from, hasFrom, f, ev, limit)
}

// forward answers a forward page from from (default: the horizon);
// known is the space as the request read it (nil: not read).
func (s *Server) forward(w http.ResponseWriter, r *http.Request, space string, known *store.Space, from int64, hasFrom bool, f changelog.Filter, ev *predicate.Eval, limit int) error {
	if !hasFrom {
		sp, err := s.log.SpaceOf(r.Context(), space, known)
		if err != nil {
			return err
		}
		from = sp.Horizon
	}
	page, err := s.log.ReadWith(r.Context(), space, from, f, limit, changelog.ReadOptions{Space: known})
	if err == nil {
		err = ev.Err()
	}
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, forwardAnswer{Changes: rowsView(page.Rows), Cursor: page.Cursor})
	return nil
}

// history answers a page of history, newest first; known is the space as
// the request read it (nil: not read).
func (s *Server) history(w http.ResponseWriter, r *http.Request, space string, known *store.Space, before int64, f changelog.Filter, ev *predicate.Eval, limit int) error {
	page, err := s.log.HistoryWith(r.Context(), space, before, f, limit, changelog.ReadOptions{Space: known})
	if err == nil {
		err = ev.Err()
	}
	if err != nil {
		return err
	}
	out := historyAnswer{Changes: rowsView(page.Rows)}
	if !page.Exhausted {
		out.Cursor = &page.Cursor
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

func rowsView(rows []store.Row) []store.Row {
	if rows == nil {
		return []store.Row{}
	}
	return rows
}

// pull answers GET .../log: raw whole commits for principals holding
// log:read.
func (s *Server) pull(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	rd, err := s.pullReader(r, space)
	if err != nil {
		return err
	}
	if !rd.Principal().Has(auth.ScopeLogRead) {
		return forbidden("the raw log needs scope %s", auth.ScopeLogRead)
	}
	q := r.URL.Query()
	if err := checkParams(q, []string{"after", "limit"}, nil); err != nil {
		return err
	}
	after, hasAfter, err := seqParam(q, "after")
	if err != nil {
		return err
	}
	limit, err := limitParam(q)
	if err != nil {
		return err
	}
	known := knownSpace(rd)
	if !hasAfter {
		sp, err := s.log.SpaceOf(r.Context(), space, known)
		if err != nil {
			return err
		}
		after = sp.Horizon
	}
	page, err := s.log.PullRawWith(r.Context(), space, after, limit, changelog.PullOptions{ReadAhead: true, Recycle: true, Space: known, RowsFirst: known == nil})
	if err != nil {
		return err
	}
	// The page is encoded into buf, then its memory goes back to the
	// store for the next pages (nothing refers to it after AppendJSON).
	read := page.Commits
	defer s.log.RecycleRaw(read)
	if page.Commits, err = readableCommits(rd, page.Commits); err != nil {
		return err
	}
	buf := pageBuffers.Get().(*[]byte)
	defer putPageBuffer(buf)
	b := page.AppendJSON((*buf)[:0])
	s.writeEncoded(w, http.StatusOK, b)
	*buf = b
	return nil
}

// pullReader is readerFor for a pull. An admin reads every commit
// (readableCommits), so no access policy is looked up for one, and the
// space is read only if the page's rows do not answer for the cursor
// (changelog.PullOptions.RowsFirst): a catch-up's pages read no row of
// the space.
func (s *Server) pullReader(r *http.Request, space string) (*auth.Reader, error) {
	p, err := authorize(r, space, accessRead)
	if err != nil {
		return nil, err
	}
	if p.IsAdmin() {
		return auth.NewReader(p, nil), nil
	}
	return s.readerOf(r, p, space)
}

// pageBuffers holds the buffers pull pages are encoded into, so a
// catch-up does not allocate (and clear) a page-sized buffer per request.
// The response writer copies the bytes before it returns.
var pageBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledPage bounds the buffers pageBuffers keeps, so one huge page
// does not stay in memory.
const maxPooledPage = 4 << 20

// putPageBuffer returns buf to pageBuffers unless it grew too large.
func putPageBuffer(buf *[]byte) {
	if cap(*buf) <= maxPooledPage {
		pageBuffers.Put(buf)
	}
}

// readableCommits drops the commits a reader may not read (auth's
// CanReadCommit: the row and every change). The page cursor still covers
// them (consumed and dropped). The stored JSON is forwarded as is; a
// commit is decoded only to be judged, and an admin (who reads every
// commit) needs none decoded.
func readableCommits(rd *auth.Reader, commits []store.RawCommit) ([]store.RawCommit, error) {
	if rd.Principal().IsAdmin() {
		return commits, nil
	}
	out := make([]store.RawCommit, 0, len(commits))
	for i := range commits {
		c, err := commits[i].Decode()
		if err != nil {
			return nil, fmt.Errorf("pull: %w", err)
		}
		if rd.CanReadCommit(&c) {
			out = append(out, commits[i])
		}
	}
	return out, nil
}
