package causality

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// Reader is the part of store.Store a walk reads.
type Reader interface {
	SpaceGet(ctx context.Context, id string) (store.Space, error)
	Commits(ctx context.Context, p store.CommitsParams) ([]store.Commit, error)
}

// Link is one row of a causal chain: its seq and depth and, for a
// delivery-authored row, the trigger and delivery. A pruned link is a
// cause below the horizon: only its seq is known, and it ends the chain.
type Link struct {
	Seq      int64
	Depth    int
	Trigger  string
	Delivery string
	Pruned   bool
}

// linkJSON is a link as the API shows it; a pruned link is
// {"seq": M, "pruned": true}.
type linkJSON struct {
	Seq      int64  `json:"seq"`
	Depth    *int   `json:"depth,omitempty"`
	Trigger  string `json:"trigger,omitempty"`
	Delivery string `json:"delivery,omitempty"`
	Pruned   bool   `json:"pruned,omitempty"`
}

// MarshalJSON encodes {"seq", "depth", "trigger"?, "delivery"?}, or
// {"seq", "pruned": true} for a pruned link.
func (l Link) MarshalJSON() ([]byte, error) {
	if l.Pruned {
		return json.Marshal(linkJSON{Seq: l.Seq, Pruned: true})
	}
	return json.Marshal(linkJSON{Seq: l.Seq, Depth: &l.Depth, Trigger: l.Trigger, Delivery: l.Delivery})
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (l *Link) UnmarshalJSON(b []byte) error {
	var j linkJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("decode link: %w", err)
	}
	*l = Link{Seq: j.Seq, Trigger: j.Trigger, Delivery: j.Delivery, Pruned: j.Pruned}
	if j.Depth != nil {
		l.Depth = *j.Depth
	}
	return nil
}

// linkOf returns the link of a commit.
func linkOf(c *store.Commit) Link {
	return Link{Seq: c.Seq, Depth: c.Provenance.Depth, Trigger: c.Provenance.Trigger, Delivery: c.Provenance.Delivery}
}

// Chain is the answer of GET .../changes/{seq}/causes: the row itself
// first, then each cause, to the root (depth 0) or a pruned link; then
// the limits of the chain (see Tally): the seq of its root write, the
// rows that root has caused so far, and the space's depth cap and causal
// budget.
type Chain struct {
	Seq      int64  `json:"seq"`
	Links    []Link `json:"chain"`
	Root     int64  `json:"root"`
	RootRows int64  `json:"rootRows"`
	Cap      int    `json:"cap"`
	Budget   int    `json:"budget"`
	// Start is the commit of Seq, for the caller's access checks.
	Start store.Commit `json:"-"`
}

// MalformedError reports a stored chain that breaks the causality rules.
// It never happens unless the stored provenance is corrupt.
type MalformedError struct {
	Space  string
	Seq    int64
	Reason string
}

// Error implements error.
func (e *MalformedError) Error() string {
	return fmt.Sprintf("malformed causal chain: space %s: seq %d: %s", e.Space, e.Seq, e.Reason)
}

// Walk returns the causal chain of seq in space, following
// provenance.causedBy. A chain holds at most maxDepth+1 links, a final
// pruned link included (pass MaxDepth: every well-formed chain fits); a
// longer one is a *MalformedError. The row itself below the horizon is a
// *changelog.HistoryUnavailableError.
func Walk(ctx context.Context, r Reader, space string, seq int64, maxDepth int) (Chain, error) {
	c, ok, err := readCommit(ctx, r, space, seq)
	if err != nil {
		return Chain{}, err
	}
	if !ok {
		sp, err := r.SpaceGet(ctx, space)
		if err != nil {
			return Chain{}, fmt.Errorf("walk causes: %w", err)
		}
		return Chain{}, &changelog.HistoryUnavailableError{Space: space, Requested: seq, Horizon: sp.Horizon}
	}
	ch := Chain{Seq: seq, Links: []Link{linkOf(&c)}, Root: RootOf(&c), Cap: DefaultCap, Budget: DefaultBudget, Start: c}
	for cause := c.Provenance.CausedBy; cause != 0; cause = c.Provenance.CausedBy {
		if err := checkStep(space, &c, len(ch.Links), maxDepth); err != nil {
			return Chain{}, err
		}
		if c, ok, err = readCommit(ctx, r, space, cause); err != nil {
			return Chain{}, err
		}
		if !ok {
			ch.Links = append(ch.Links, Link{Seq: cause, Pruned: true})
			break
		}
		ch.Links = append(ch.Links, linkOf(&c))
	}
	return ch, nil
}

// checkStep checks that c's cause may be followed from a chain of n
// links.
func checkStep(space string, c *store.Commit, n, maxDepth int) error {
	switch {
	case c.Provenance.CausedBy >= c.Seq || c.Provenance.CausedBy < 0:
		return &MalformedError{Space: space, Seq: c.Seq, Reason: fmt.Sprintf("causedBy %d is not a smaller seq", c.Provenance.CausedBy)}
	case n > maxDepth:
		return &MalformedError{Space: space, Seq: c.Seq, Reason: fmt.Sprintf("chain is longer than %d rows", maxDepth+1)}
	}
	return nil
}

// readCommit reads the commit of seq; ok is false when it was pruned.
func readCommit(ctx context.Context, r Reader, space string, seq int64) (store.Commit, bool, error) {
	cs, err := r.Commits(ctx, store.CommitsParams{Space: space, After: seq - 1, Limit: 1})
	if err != nil {
		return store.Commit{}, false, fmt.Errorf("read commit %d: %w", seq, err)
	}
	if len(cs) == 1 && cs[0].Seq == seq {
		return cs[0], true, nil
	}
	sp, err := r.SpaceGet(ctx, space)
	if err != nil {
		return store.Commit{}, false, fmt.Errorf("read commit %d: %w", seq, err)
	}
	if seq <= sp.Horizon {
		return store.Commit{}, false, nil
	}
	return store.Commit{}, false, fmt.Errorf("read commit %d: missing above the horizon %d of space %s", seq, sp.Horizon, space)
}

// Tally fills in the rows the chain's root has caused so far (its causal
// budget counter) and the depth cap and causal budget of the space
// (spaceCap, spaceBudget; 0: DefaultCap, DefaultBudget).
func (ch *Chain) Tally(ctx context.Context, st store.RootCountStore, space string, spaceCap, spaceBudget int) error {
	counts, err := st.RootCounts(ctx, space, []int64{ch.Root})
	if err != nil {
		return fmt.Errorf("tally root %d: %w", ch.Root, err)
	}
	ch.RootRows = counts[ch.Root].Rows
	ch.Cap, ch.Budget = Cap(spaceCap, 0), Budget(spaceBudget, 0)
	return nil
}
