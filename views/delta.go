package views

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Commit is one source commit of a delta page: its seq and the view
// changes it makes.
type Commit struct {
	Seq     int64    `json:"seq"`
	Changes []Change `json:"changes"`
}

// DeltaPage is one page of a view's delta: the view changes of the
// source commits after PreviousCursor through Cursor. Commits with
// nothing for the view are left out, but Cursor covers them.
type DeltaPage struct {
	Context        Context  `json:"context"`
	PreviousCursor string   `json:"previousCursor"`
	Cursor         string   `json:"cursor"`
	HasMore        bool     `json:"hasMore"`
	Commits        []Commit `json:"commits"`
	// Acks maps each push client of the requesting principal whose
	// pushes landed in the page's range to the last ordinal that did
	// (DESIGN 8 and 8b); omitted when there is none.
	Acks map[string]int64 `json:"acks,omitempty"`
}

// DeltaParams select one delta page.
type DeltaParams struct {
	Space, View string
	// Cursor is the position to continue after (a view cursor).
	Cursor string
	// Budget is how many source commits the page may read (default
	// DefaultBudget, at most MaxBudget); a commit is never split.
	Budget int
	// Reader decides what may be projected; it must be allowed every
	// type of the view.
	Reader Reader
}

// checkBudget applies the budget's default and range.
func checkBudget(b int) (int, error) {
	switch {
	case b == 0:
		return DefaultBudget, nil
	case b < 1 || b > MaxBudget:
		return 0, problem.Param("budget", "want 1 to %d source commits, got %d", MaxBudget, b)
	}
	return b, nil
}

// Delta returns the next delta page of a view after a cursor. A cursor
// that no longer holds is a reset_required answer with its reason; a
// malformed or foreign one is bad_request. Retrying a cursor answers the
// same commits again.
func (s *Service) Delta(ctx context.Context, p DeltaParams) (DeltaPage, error) {
	budget, err := checkBudget(p.Budget)
	if err != nil {
		return DeltaPage{}, err
	}
	d, sp, vc, err := s.load(ctx, p.Space, p.View, p.Reader)
	if err != nil {
		return DeltaPage{}, err
	}
	cd, err := s.codec(ctx, p.Space, p.View)
	if err != nil {
		return DeltaPage{}, err
	}
	cur, err := s.position(cd, sp, vc, p.Cursor)
	if err != nil {
		return DeltaPage{}, err
	}
	commits, err := s.readCommits(ctx, sp, cur.seq, budget)
	if err != nil {
		return DeltaPage{}, err
	}
	page := DeltaPage{Context: vc, PreviousCursor: cd.encodeCursor(cur), Commits: []Commit{}}
	last := cur.seq
	n := 0
	for i := range commits {
		c := projectCommit(d, &commits[i], p.Reader)
		if len(c.Changes) > 0 {
			page.Commits = append(page.Commits, c)
			n += len(c.Changes)
		}
		last = commits[i].Seq
	}
	page.Cursor = cd.encodeCursor(cursor{bind: vc.binding(), seq: last})
	page.HasMore = last < sp.Head
	ptrs := make([]*store.Commit, len(commits))
	for i := range commits {
		ptrs[i] = &commits[i]
	}
	if page.Acks, err = s.acks(ctx, p.Space, p.Reader, ptrs); err != nil {
		return DeltaPage{}, err
	}
	s.observe(Event{Kind: "projected", Space: p.Space, View: p.View, Changes: n})
	return page, nil
}

// position decodes a cursor and checks it against the view's current
// context and the space's retained history.
func (s *Service) position(cd codec, sp store.Space, vc Context, raw string) (cursor, error) {
	if raw == "" {
		return cursor{}, problem.Param("cursor", "required: the cursor of the last bootstrap or delta page")
	}
	cur, err := cd.decodeCursor(raw)
	if err != nil {
		return cursor{}, problem.Param("cursor", "not a cursor of view %q in space %q (malformed, tampered, or issued for another view or space)", vc.View, vc.Space)
	}
	if reason := cur.bind.stale(vc); reason != "" {
		return cursor{}, s.reset(vc.Space, vc.View, reason, "the cursor was issued for another %s; bootstrap view %q again", staleWhat(reason), vc.View)
	}
	return cur, s.inHistory(sp, vc.View, cur.seq, "cursor")
}

// staleWhat names what changed under a stale binding.
func staleWhat(r Reason) string {
	switch r {
	case EpochChanged:
		return "epoch of the space"
	case SchemaChanged:
		return "schema of the view's types"
	}
	return "definition of the view"
}

// inHistory checks that seq is a serviceable position: horizon <= seq <=
// head.
func (s *Service) inHistory(sp store.Space, view string, seq int64, what string) error {
	switch {
	case seq > sp.Head:
		return s.reset(sp.ID, view, CursorAhead, "%s position %d is beyond the head %d of the space", what, seq, sp.Head)
	case seq < sp.Horizon:
		return s.reset(sp.ID, view, HistoryPruned, "%s position %d is below the horizon %d: that history was pruned", what, seq, sp.Horizon)
	}
	return nil
}

// readCommits reads at most budget whole commits after seq, checking
// that none of them was pruned away meanwhile.
func (s *Service) readCommits(ctx context.Context, sp store.Space, seq int64, budget int) ([]store.Commit, error) {
	if seq >= sp.Head {
		return nil, nil
	}
	commits, err := s.st.Commits(ctx, store.CommitsParams{Space: sp.ID, After: seq, Limit: budget, NoReceipts: true})
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
		return nil, s.reset(sp.ID, "", HistoryPruned, "position %d fell below the horizon %d while it was read", seq, now.Horizon)
	}
	return nil, fmt.Errorf("read commits of %s after %d: missing below horizon %d", sp.ID, seq, now.Horizon)
}

// projectCommit projects one source commit for a reader.
func projectCommit(d *Definition, c *store.Commit, r Reader) Commit {
	out := Commit{Seq: c.Seq}
	for i := range c.Changes {
		ch := &c.Changes[i]
		if vc, ok := d.Project(ch, d.Judge(ch), r); ok {
			out.Changes = append(out.Changes, vc)
		}
	}
	return out
}

func jsonMarshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return b, nil
}
