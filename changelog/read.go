package changelog

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Pull returns whole commits with seq > after, for trusted
// infrastructure. limit is a soft budget in changes: the first commit is
// always returned whole; another is added only if it fits. NextCursor is
// the last fully returned seq, or after for an empty page.
func (l *Log) Pull(ctx context.Context, space string, after int64, limit int) (PullPage, error) {
	return l.PullWith(ctx, space, after, limit, PullOptions{})
}

// Commit returns the whole commit seq, which the caller knows to be in
// 1..head: a *HistoryUnavailableError when it was pruned.
func (l *Log) Commit(ctx context.Context, space string, seq int64) (store.Commit, error) {
	page, err := l.Pull(ctx, space, seq-1, 1)
	if err != nil {
		return store.Commit{}, err
	}
	if len(page.Commits) == 0 || page.Commits[0].Seq != seq {
		return store.Commit{}, fmt.Errorf("read commit %d of %s: missing", seq, space)
	}
	return page.Commits[0], nil
}

// PullOptions tune PullWith.
type PullOptions struct {
	// NoReceipts leaves every commit's Receipt zero, for readers with no
	// use for receipts (it saves reading and decoding them).
	NoReceipts bool
	// ReadAhead (PullRawWith only) reads a sequential reader's next page
	// while the caller handles this one (see readahead.go).
	ReadAhead bool
	// ChangesOf (PullRawWith only), when not nil, reads the changes and
	// provenance only of the commits of these entity types
	// (store.CommitsParams.ChangesOf): the others come with both nil,
	// their ChangeCount intact.
	ChangesOf []string
	// Recycle (PullRawWith only) reads pages whose memory the caller hands
	// back with Log.RecycleRaw once it is done with them (see
	// store.Recycler).
	Recycle bool
	// Space, when not nil, is the space as the caller read it for this
	// request (auth.Reader.Space): after is judged against its head and
	// horizon instead of reading the space again.
	Space *store.Space
	// RowsFirst (PullRawWith only, with Space nil) reads the page before
	// the space, and does not read the space when the rows answer for
	// the cursor: the commit right after it is there (so it is neither
	// pruned nor past the head), and the rows were read for this request
	// or fill the page (so none acknowledged before it is missing). A
	// sequential reader's page then costs no lookup of its space; an
	// empty, pruned or short page read ahead is judged against the space
	// as without the option. For callers that need nothing else of the
	// space (an admin's pull: no access policy to find).
	RowsFirst bool
}

// PullWith is Pull with options.
func (l *Log) PullWith(ctx context.Context, space string, after int64, limit int, opts PullOptions) (PullPage, error) {
	if limit < 1 {
		return PullPage{}, problem.Param("limit", "must be at least 1, got %d", limit)
	}
	sp, err := l.readable(ctx, space, opts.Space, after, "after")
	if err != nil {
		return PullPage{}, err
	}
	page := PullPage{Commits: []store.Commit{}, NextCursor: after}
	if after == sp.Head {
		return page, nil
	}
	commits, err := l.st.Commits(ctx, store.CommitsParams{Space: space, After: after, Limit: limit + 1, NoReceipts: opts.NoReceipts})
	if err != nil {
		return PullPage{}, fmt.Errorf("pull: %w", err)
	}
	if len(commits) == 0 || commits[0].Seq != after+1 {
		return PullPage{}, l.pruned(ctx, space, after)
	}
	page.Commits, page.NextCursor, page.HasMore = fitPage(commits, limit, after, sp.Head,
		func(c *store.Commit) (int64, int) { return c.Seq, len(c.Changes) })
	return page, nil
}

// RawPullPage is a page of whole commits as stored (see Log.PullRaw); it
// renders as JSON byte for byte as the PullPage of the same commits.
type RawPullPage struct {
	Commits    []store.RawCommit `json:"commits"`
	NextCursor int64             `json:"nextCursor"`
	HasMore    bool              `json:"hasMore"`
}

// AppendJSON appends the page as json.Marshal renders it, faster: the
// commits' stored JSON is copied, not re-scanned.
func (p *RawPullPage) AppendJSON(b []byte) []byte {
	size := 64
	for i := range p.Commits {
		c := &p.Commits[i]
		size += 160 + len(c.Actor) + len(c.EntityID) + len(c.Type) + len(c.Payload) + len(c.Changes) + len(c.Receipt) + len(c.Provenance)
	}
	b = slices.Grow(b, size)
	b = append(b, `{"commits":[`...)
	for i := range p.Commits {
		if i > 0 {
			b = append(b, ',')
		}
		b = p.Commits[i].AppendJSON(b)
	}
	b = append(b, `],"nextCursor":`...)
	b = strconv.AppendInt(b, p.NextCursor, 10)
	b = append(b, `,"hasMore":`...)
	b = strconv.AppendBool(b, p.HasMore)
	return append(b, '}')
}

// PullRaw is Pull for readers that forward the commits: their changes,
// receipt and provenance stay the stored JSON, not decoded (decode one
// with store.RawCommit.Decode when a value is needed). For a sequential
// reader (one starting where its previous page ended) it reads the next
// page while the caller sends this one (see readahead.go).
func (l *Log) PullRaw(ctx context.Context, space string, after int64, limit int) (RawPullPage, error) {
	return l.PullRawWith(ctx, space, after, limit, PullOptions{ReadAhead: true})
}

// PullRawWith is PullRaw with options.
func (l *Log) PullRawWith(ctx context.Context, space string, after int64, limit int, opts PullOptions) (RawPullPage, error) {
	if limit < 1 {
		return RawPullPage{}, problem.Param("limit", "must be at least 1, got %d", limit)
	}
	page := RawPullPage{Commits: []store.RawCommit{}, NextCursor: after}
	rowsFirst := opts.RowsFirst && opts.Space == nil && after >= 0
	var sp store.Space
	if !rowsFirst {
		var err error
		if sp, err = l.readable(ctx, space, opts.Space, after, "after"); err != nil {
			return RawPullPage{}, err
		}
		if after == sp.Head {
			return page, nil
		}
	}
	p := store.CommitsParams{Space: space, After: after, Limit: limit + 1, NoReceipts: opts.NoReceipts, ChangesOf: opts.ChangesOf, Recycle: opts.Recycle}
	commits, ahead, err := l.pullRows(ctx, p, opts.ReadAhead)
	if err != nil {
		return RawPullPage{}, err
	}
	if rowsFirst && !(len(commits) > 0 && commits[0].Seq == after+1 && (!ahead || len(commits) > limit)) {
		// The rows do not answer for the cursor: judge it against the space.
		if sp, err = l.readable(ctx, space, nil, after, "after"); err != nil || after == sp.Head {
			l.recycleIf(opts, commits)
			return page, err
		}
	}
	if len(commits) == 0 || commits[0].Seq != after+1 {
		l.recycleIf(opts, commits)
		return RawPullPage{}, l.pruned(ctx, space, after)
	}
	page.Commits, page.NextCursor, page.HasMore = fitPage(commits, limit, after, sp.Head,
		func(c *store.RawCommit) (int64, int) { return c.Seq, c.ChangeCount() })
	if opts.ReadAhead {
		l.ahead.answered(l, p, page.NextCursor, page.HasMore)
	}
	return page, nil
}

// pullRows returns the rows of p: the page read ahead for it (ahead
// true) or, without one, read now.
func (l *Log) pullRows(ctx context.Context, p store.CommitsParams, readAhead bool) (commits []store.RawCommit, ahead bool, err error) {
	if readAhead {
		if commits, ahead = l.ahead.take(p); ahead {
			return commits, true, nil
		}
	}
	if commits, err = l.st.RawCommits(ctx, p); err != nil {
		return nil, false, fmt.Errorf("pull: %w", err)
	}
	return commits, false, nil
}

// recycleIf hands back a page read with opts.Recycle that is not
// answered.
func (l *Log) recycleIf(opts PullOptions, commits []store.RawCommit) {
	if opts.Recycle && len(commits) > 0 {
		l.RecycleRaw(commits)
	}
}

// RecycleRaw hands the memory of a page PullRawWith read with
// PullOptions.Recycle back to the store, for the pages after it. Pass the
// page's Commits as PullRawWith returned them (before any filtering), and
// only once nothing refers to them, nor to any string or JSON of theirs:
// the next pages overwrite them. A store that cannot reuse pages ignores
// it (see store.Recycler).
func (l *Log) RecycleRaw(commits []store.RawCommit) {
	if r, ok := l.st.(store.Recycler); ok {
		r.RecycleRaw(commits)
	}
}

// RecycleRows is RecycleRaw for the Rows of a page ReadWith read with
// ReadOptions.Recycle.
func (l *Log) RecycleRows(rows []store.Row) {
	if r, ok := l.st.(store.Recycler); ok {
		r.RecycleRows(rows)
	}
}

// SplitRaw cuts commits read in seq order (a RawPullPage's) into the
// pages PullRaw with limit would answer one after the other, by the same
// rule (fitPage). The last page may be short of what PullRaw would
// answer when commits do not reach the head.
func SplitRaw(commits []store.RawCommit, limit int) [][]store.RawCommit {
	var pages [][]store.RawCommit
	for len(commits) > 0 {
		kept, _, _ := fitPage(commits, limit, 0, 0, func(c *store.RawCommit) (int64, int) { return c.Seq, c.ChangeCount() })
		pages = append(pages, kept[:len(kept):len(kept)])
		commits = commits[len(kept):]
	}
	return pages
}

// fitPage cuts a read of up to limit+1 commits after after to a pull
// page: limit is a soft budget in changes (size gives a commit's seq and
// change count); the first commit is always kept whole, another only if
// it fits. It returns the kept commits, the next cursor and whether more
// remain below head.
func fitPage[C any](commits []C, limit int, after, head int64, size func(*C) (int64, int)) ([]C, int64, bool) {
	next, more, budget := after, false, 0
	kept := commits[:0]
	for i := range commits {
		seq, n := size(&commits[i])
		if i > 0 && (budget+n > limit || i == limit) {
			more = true
			break
		}
		budget += n
		kept = append(kept, commits[i])
		next = seq
	}
	return kept, next, more || next < head
}

// readable returns the space if pos is a serviceable cursor in it:
// 0 <= pos <= head (bad_request otherwise) and pos >= horizon
// (HistoryUnavailableError otherwise). known is the space as the caller
// read it for this request; nil reads it.
func (l *Log) readable(ctx context.Context, space string, known *store.Space, pos int64, param string) (store.Space, error) {
	if pos < 0 {
		return store.Space{}, problem.Param(param, "must not be negative, got %d", pos)
	}
	sp, err := l.SpaceOf(ctx, space, known)
	if err != nil {
		return store.Space{}, err
	}
	if pos > sp.Head {
		return store.Space{}, problem.Param(param, "%d is ahead of the head %d", pos, sp.Head).With("head", sp.Head)
	}
	if pos < sp.Horizon {
		return store.Space{}, &HistoryUnavailableError{Space: space, Requested: pos, Horizon: sp.Horizon}
	}
	return sp, nil
}

// pruned re-reads the horizon after a read that found rows missing and
// reports the history that a concurrent prune took.
func (l *Log) pruned(ctx context.Context, space string, pos int64) error {
	sp, err := l.Space(ctx, space)
	if err != nil {
		return err
	}
	if pos < sp.Horizon {
		return &HistoryUnavailableError{Space: space, Requested: pos, Horizon: sp.Horizon}
	}
	return fmt.Errorf("read space %s after %d: commits missing below horizon %d", space, pos, sp.Horizon)
}

// checkHorizon fails with HistoryUnavailableError if the horizon has
// passed pos since the read began.
func (l *Log) checkHorizon(ctx context.Context, space string, pos int64) error {
	sp, err := l.Space(ctx, space)
	if err != nil {
		return err
	}
	if pos < sp.Horizon {
		return &HistoryUnavailableError{Space: space, Requested: pos, Horizon: sp.Horizon}
	}
	return nil
}

// Read returns a forward page of rows with seq > from that match f, in
// seq order. It scans at most MaxScan seqs, so a page may hold fewer rows
// than limit, even none; Cursor is the last position consumed (the head
// when the read caught up).
func (l *Log) Read(ctx context.Context, space string, from int64, f Filter, limit int) (Page, error) {
	return l.ReadWith(ctx, space, from, f, limit, ReadOptions{})
}

// ReadOptions tune ReadWith and HistoryWith.
type ReadOptions struct {
	// Recycle (ReadWith only) reads a page whose memory the caller hands
	// back with RecycleRows once it is done with its rows (see
	// store.Recycler).
	Recycle bool
	// Space, when not nil, is the space as the caller read it for this
	// request (auth.Reader.Space): the cursor is judged against its head
	// and horizon instead of reading the space again.
	Space *store.Space
}

// ReadWith is Read with options.
func (l *Log) ReadWith(ctx context.Context, space string, from int64, f Filter, limit int, opts ReadOptions) (Page, error) {
	if limit < 1 {
		return Page{}, problem.Param("limit", "must be at least 1, got %d", limit)
	}
	sp, err := l.readable(ctx, space, opts.Space, from, "from")
	if err != nil {
		return Page{}, err
	}
	hi := min(sp.Head, from+int64(l.opts.MaxScan))
	page := Page{Rows: []store.Row{}, Cursor: hi, Head: sp.Head}
	if hi == from {
		return page, nil
	}
	rows, err := l.st.Rows(ctx, store.RowsParams{Space: space, Lo: from, Hi: hi, Filter: f.RowFilter(), Limit: limit, Recycle: opts.Recycle})
	if err != nil {
		return Page{}, fmt.Errorf("read rows: %w", err)
	}
	if len(rows) == limit {
		page.Cursor = rows[len(rows)-1].Seq
	}
	// A prune takes a prefix of the log in one transaction: if the read
	// saw commit from+1, it missed nothing; otherwise the horizon says.
	whole := len(rows) > 0 && rows[0].Seq == from+1
	if page.Rows, err = l.Keep(ctx, space, rows, &f); err != nil {
		return Page{}, err
	}
	if whole {
		return page, nil
	}
	if err := l.checkHorizon(ctx, space, from); err != nil {
		return Page{}, err
	}
	return page, nil
}

// History returns a backward page of rows with seq < before (0 = from the
// head), newest first. Cursor is the oldest seq consumed, to pass as the
// next before; Exhausted says nothing older remains above the horizon.
func (l *Log) History(ctx context.Context, space string, before int64, f Filter, limit int) (Page, error) {
	return l.HistoryWith(ctx, space, before, f, limit, ReadOptions{})
}

// HistoryWith is History with options; it honours ReadOptions.Space (a
// history page is never recycled). The horizon is read again after the
// rows, as History does: a prune meanwhile is history_unavailable.
func (l *Log) HistoryWith(ctx context.Context, space string, before int64, f Filter, limit int, opts ReadOptions) (Page, error) {
	if limit < 1 {
		return Page{}, problem.Param("limit", "must be at least 1, got %d", limit)
	}
	sp, err := l.SpaceOf(ctx, space, opts.Space)
	if err != nil {
		return Page{}, err
	}
	if before == 0 {
		before = sp.Head + 1
	}
	if before < 1 || before > sp.Head+1 {
		return Page{}, problem.Param("before", "must be between 1 and head+1 (%d), got %d", sp.Head+1, before).With("head", sp.Head)
	}
	if before-1 < sp.Horizon {
		return Page{}, &HistoryUnavailableError{Space: space, Requested: before - 1, Horizon: sp.Horizon}
	}
	lo := max(sp.Horizon, before-1-int64(l.opts.MaxScan))
	page := Page{Rows: []store.Row{}, Cursor: lo + 1, Head: sp.Head}
	rows, err := l.st.Rows(ctx, store.RowsParams{Space: space, Lo: lo, Hi: before - 1, Filter: f.RowFilter(), Desc: true, Limit: limit})
	if err != nil {
		return Page{}, fmt.Errorf("read history: %w", err)
	}
	if len(rows) == limit {
		page.Cursor = rows[len(rows)-1].Seq
	}
	page.Exhausted = page.Cursor <= sp.Horizon+1
	if page.Rows, err = l.Keep(ctx, space, rows, &f); err != nil {
		return Page{}, err
	}
	if err := l.checkHorizon(ctx, space, lo); err != nil {
		return Page{}, err
	}
	return page, nil
}

// Prune deletes commits <= through and moves the horizon to through; the
// head never moves back. through must lie between the horizon and head.
func (l *Log) Prune(ctx context.Context, space string, through int64) (store.Space, error) {
	sp, err := l.Space(ctx, space)
	if err != nil {
		return store.Space{}, err
	}
	if through < sp.Horizon || through > sp.Head {
		return store.Space{}, problem.Param("through", "must be between the horizon %d and the head %d, got %d", sp.Horizon, sp.Head, through)
	}
	if through == sp.Horizon {
		return sp, nil
	}
	sp, err = l.st.SpacePrune(ctx, space, through)
	if err != nil {
		return store.Space{}, fmt.Errorf("prune: %w", err)
	}
	return sp, nil
}
