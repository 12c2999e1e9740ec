package journal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Session is what POST .../journal/sessions answers.
type Session struct {
	SessionID       string    `json:"sessionId"`
	Cursor          string    `json:"cursor"`
	CursorExpiresAt time.Time `json:"cursorExpiresAt"`
	FetchToken      string    `json:"fetchToken"`
}

// CreateSession opens a session for a client in a space. Its cursor is
// stamped a safe window behind the settled tail, so a client that renews
// while caught up (within a safe window of its last page) is handed a
// position at or behind its own: nothing is lost, and what it is handed
// twice changes nothing. Its cursorExpiresAt is now + retention, and no
// read moves it. The fetch token pages the initial fetch as of the same
// position. Sessions keep no server state: the cursor and the fetch token
// carry everything, so a cursor outlives its session and a new session
// annuls nothing.
func (s *Service) CreateSession(ctx context.Context, space string, c Client) (Session, error) {
	if err := c.check(); err != nil {
		return Session{}, err
	}
	sp, err := s.log.Space(ctx, space)
	if err != nil {
		return Session{}, err
	}
	cd, err := s.codec(ctx, space, c)
	if err != nil {
		return Session{}, err
	}
	now := s.now()
	pos, err := s.seqAt(ctx, sp, now.Add(-2*s.opts.SafeWindow))
	if err != nil {
		return Session{}, err
	}
	st := stamp{epoch: epochOf(sp.Epoch), access: accessOf(fingerprint(c.Reader)), expires: now.Add(s.opts.Retention)}
	if _, err := rand.Read(st.session[:]); err != nil {
		return Session{}, fmt.Errorf("new session id: %w", err)
	}
	s.observe(Event{Kind: "session", Space: space})
	return Session{
		SessionID:       "js_" + hex.EncodeToString(st.session[:]),
		Cursor:          cd.encodeCursor(cursor{stamp: st, seq: pos}),
		CursorExpiresAt: st.expires,
		FetchToken:      cd.encodeFetch(fetchToken{stamp: st, position: pos}),
	}, nil
}

// check refuses a stamp that stopped being accepted: past its expiry,
// issued before the space's epoch rotated (its positions address another
// past), or for a reader whose verdicts have changed since (an access
// rule or the allow-list: what the client holds may no longer be what it
// may see, and no commit says so).
func (s *Service) check(st stamp, sp store.Space, r Reader, what string) error {
	now := s.now()
	if !now.Before(st.expires) {
		return problem.New(problem.CursorExpired, "the %s expired at %s (its session was created %s before); create a session and rebuild from its initial fetch",
			what, st.expires.Format(time.RFC3339), s.opts.Retention).With("cursorExpiresAt", st.expires)
	}
	if st.epoch != epochOf(sp.Epoch) {
		return problem.New(problem.CursorExpired, "the %s was issued before the epoch of space %q changed; create a session and rebuild from its initial fetch", what, sp.ID).
			With("reason", "epoch_changed")
	}
	if st.access != accessOf(fingerprint(r)) {
		return problem.New(problem.CursorExpired, "the %s was issued before the access rules or the token's types changed; create a session and rebuild from its initial fetch", what).
			With("reason", "access_changed")
	}
	return nil
}

// pruned is the answer to a position that fell below the horizon.
func pruned(what string, pos int64, sp store.Space) error {
	return problem.New(problem.CursorExpired, "the %s position %d is below the horizon %d of space %q: that history was pruned; create a session and rebuild from its initial fetch",
		what, pos, sp.Horizon, sp.ID).With("reason", "history_pruned").With("horizon", sp.Horizon)
}
