package changelog

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/eddy-run/eddy/internal/readahead"
	"github.com/eddy-run/eddy/store"
)

// Read-ahead for sequential raw pullers. A reader that pulls page after
// page (GET .../log, each request starting at the previous page's
// NextCursor) asks for the next page only after it has received and
// handled the current one. PullRaw therefore reads that next page, and
// the one after it, in the background as soon as it has answered a page
// that follows the previous one, while the caller encodes and sends it;
// the next PullRaw at that position takes the page instead of reading it.
// The two reads run at once (on PostgreSQL, on two connections): with
// one page ahead, the server still waited for two pages in three. A
// one-off pull (not at the last answer's NextCursor) reads nothing ahead.
//
// A page read ahead is as good as one read later: commits are immutable,
// and the caller checks the space (readable) before using it, so a prune
// in between still answers history_unavailable. It is held for at most
// aheadTTL, one per space, aheadSpaces spaces at most.
const (
	aheadTTL    = 5 * time.Second
	aheadSpaces = 16
)

// pullAhead holds, per space, the position after the last raw page
// answered and the page being read ahead.
type pullAhead struct {
	mu     sync.Mutex
	spaces map[string]*aheadSpace // guarded by mu
	ctx    context.Context
	stop   context.CancelFunc
	closed bool // guarded by mu
}

// aheadDepth is how many pages a sequential reader has read ahead: the
// next one, and the one after it where pages have kept one size (so its
// start is known), each on its own connection.
const aheadDepth = 2

// aheadSpace is one space's read-ahead state.
type aheadSpace struct {
	// next is the NextCursor of the last page answered.
	next int64
	// pages are the reads in flight or done, in seq order: the first
	// after next, the rest where the pages before them would end.
	pages *readahead.Queue[store.CommitsParams, []store.RawCommit]
	at    time.Time
}

// take returns the commits read ahead for p (ok false when none were).
func (a *pullAhead) take(p store.CommitsParams) ([]store.RawCommit, bool) {
	a.mu.Lock()
	var r *readahead.Read[store.CommitsParams, []store.RawCommit]
	if sp := a.spaces[p.Space]; sp != nil {
		r = sp.pages.Take(p)
	}
	a.mu.Unlock()
	if r == nil {
		return nil, false
	}
	commits, err := r.Wait()
	return commits, err == nil
}

// answered notes a page answered after after, ending at next, and starts
// reading the following page when this one followed the previous one and
// more remain.
func (a *pullAhead) answered(l *Log, p store.CommitsParams, next int64, more bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	if a.spaces == nil {
		a.spaces = map[string]*aheadSpace{}
		a.ctx, a.stop = context.WithCancel(context.Background())
	}
	now := time.Now()
	for id, sp := range a.spaces {
		if now.Sub(sp.at) > aheadTTL {
			delete(a.spaces, id)
		}
	}
	sp := a.spaces[p.Space]
	if sp == nil {
		if len(a.spaces) >= aheadSpaces {
			return
		}
		sp = &aheadSpace{next: -1, pages: readahead.New[store.CommitsParams, []store.RawCommit](sameParams)}
		a.spaces[p.Space] = sp
	}
	sequential := sp.next == p.After
	sp.next, sp.at = next, now
	if !sequential || !more {
		sp.pages.Clear()
		return
	}
	keys := make([]store.CommitsParams, aheadDepth)
	for i, after := 0, next; i < aheadDepth; i, after = i+1, after+(next-p.After) {
		keys[i] = p
		keys[i].After = after
	}
	sp.pages.Fill(keys, func(k store.CommitsParams) ([]store.RawCommit, error) {
		ctx, cancel := context.WithTimeout(a.ctx, aheadTTL)
		defer cancel()
		return l.st.RawCommits(ctx, k)
	}, func(f func()) { go f() })
}

// close stops the reads in flight and forgets every page.
func (a *pullAhead) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stop != nil {
		a.stop()
	}
	a.spaces, a.closed = nil, true
}

// sameParams reports whether a read with p answers a read with q.
func sameParams(p, q store.CommitsParams) bool {
	return p.Space == q.Space && p.After == q.After && p.Limit == q.Limit && p.NoReceipts == q.NoReceipts && p.Recycle == q.Recycle &&
		(p.ChangesOf == nil) == (q.ChangesOf == nil) && slices.Equal(p.ChangesOf, q.ChangesOf)
}
