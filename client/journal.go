package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/eddy-run/eddy/journal"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// The journal's shapes (DESIGN section 9).
type (
	// JournalCapabilities are the server's journal settings.
	JournalCapabilities = journal.Capabilities
	// JournalSession is a new session: cursor, expiry and fetch token.
	JournalSession = journal.Session
	// JournalPage is one journal page.
	JournalPage = journal.Page
	// JournalRecord is one record of a page (object, tombstone, access).
	JournalRecord = journal.Record
	// JournalWarning names what a page could not describe.
	JournalWarning = journal.Warning
	// JournalFetchPage is one page of a session's initial fetch.
	JournalFetchPage = journal.FetchPage
	// JournalState is the state of one entity a state check asked about.
	JournalState = journal.StateResult
)

// Journal problem codes: a refused cursor is rebuilt from a new session's
// initial fetch and a state check.
const (
	CodeCursorInvalid = problem.CursorInvalid
	CodeCursorExpired = problem.CursorExpired
)

// CursorRefused reports whether err refused a journal cursor
// (cursor_invalid or cursor_expired): the one answer a client rebuilds
// its memory for.
func CursorRefused(err error) bool {
	c := CodeOf(err)
	return c == CodeCursorInvalid || c == CodeCursorExpired
}

// JournalCapabilities returns the safe window, the retention and the page
// limit the server applies.
func (s *Space) JournalCapabilities(ctx context.Context) (JournalCapabilities, error) {
	var c JournalCapabilities
	_, err := s.c.callJSON(ctx, get(s.path("journal", "capabilities"), nil), &c)
	return c, err
}

// JournalSession creates a session for the token's user and application.
// Creating one again is harmless (it annuls no cursor), so the call may
// be retried.
func (s *Space) JournalSession(ctx context.Context) (JournalSession, error) {
	var ses JournalSession
	cl := send(http.MethodPost, s.path("journal", "sessions"), []byte(`{}`))
	cl.retry = true
	_, err := s.c.callJSON(ctx, cl, &ses)
	return ses, err
}

// Journal returns the page after cursor (limit 0: the server's page
// limit). Read on with NextCursor while HasMore.
func (s *Space) Journal(ctx context.Context, cursor string, limit int) (JournalPage, error) {
	q := url.Values{"cursor": {cursor}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p JournalPage
	_, err := s.c.callJSON(ctx, get(s.path("journal"), q), &p)
	return p, err
}

// JournalFetch returns a page of a session's initial fetch after after
// ("" for the first page); read on with *Next until it is nil.
func (s *Space) JournalFetch(ctx context.Context, token, after string, limit int) (JournalFetchPage, error) {
	q := url.Values{"token": {token}}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var p JournalFetchPage
	_, err := s.c.callJSON(ctx, get(s.path("journal", "fetch"), q), &p)
	return p, err
}

// JournalState asks the state of up to 1,000 entities (present, gone or
// hidden), answered in request order.
func (s *Space) JournalState(ctx context.Context, ids []store.EntityKey) ([]JournalState, error) {
	var out struct {
		Results []JournalState `json:"results"`
	}
	cl := send(http.MethodPost, s.path("journal", "state"), map[string]any{"ids": ids})
	cl.retry = true
	_, err := s.c.callJSON(ctx, cl, &out)
	return out.Results, err
}

// JournalFollow reads the journal from cursor, handing every page to fn,
// until ctx ends or fn or a read fails: it reads on while HasMore and,
// caught up, waits poll (default 1s) before asking again. It returns the
// last cursor it stood at, so a caller can resume from it.
func (s *Space) JournalFollow(ctx context.Context, cursor string, limit int, poll time.Duration, fn func(JournalPage) error) (string, error) {
	if poll <= 0 {
		poll = time.Second
	}
	for {
		p, err := s.Journal(ctx, cursor, limit)
		if err != nil {
			return cursor, err
		}
		if err := fn(p); err != nil {
			return cursor, err
		}
		cursor = p.NextCursor
		if p.HasMore {
			continue
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return cursor, ctx.Err()
		case <-t.C:
		}
	}
}
