package causality

import (
	"context"
	"fmt"

	"github.com/eddy-run/eddy/store"
)

// TreeReader is the part of store.Store a tree reads: the walk up, and
// the rows and deliveries a row caused.
type TreeReader interface {
	Reader
	store.CausalStore
	DeliveriesAt(ctx context.Context, space string, seq int64) ([]store.Delivery, error)
}

// DefaultTreeRows bounds the rows of a tree when Descend is given no
// bound.
const DefaultTreeRows = 500

// Tree is the causal tree a row belongs to: its root and every row the
// root caused, down through the deliveries each row caused, to the
// leaves.
type Tree struct {
	// Seq is the row asked about; Start is its commit, for the caller's
	// access checks (a truncated tree may not reach it).
	Seq   int64
	Start store.Commit
	// Root is the root of Seq's chain (depth 0), or, when the chain
	// reaches below the horizon (Pruned), its oldest retained row.
	Root   int64
	Pruned bool
	// Commits are the root and the rows it caused, in seq order (a cause
	// always precedes what it caused).
	Commits []store.Commit
	// Deliveries are the deliveries those rows caused, by cause seq and
	// then trigger: a delivery's row is its cause, the rows whose
	// provenance names it are what it authored.
	Deliveries []store.Delivery
	// Truncated reports that the tree has more rows than were read.
	Truncated bool
}

// Descend returns the tree of seq in space: it walks up to the root
// (Walk), then down level by level, reading at most maxRows rows
// (DefaultTreeRows when maxRows < 1). Every level is one read of the rows
// caused by the level above, so a tree costs its depth in reads plus one
// delivery read per row. Causes are strictly smaller seqs, so the descent
// ends; a tree deeper than WalkLimit levels is cut there (Truncated).
func Descend(ctx context.Context, r TreeReader, space string, seq int64, maxRows int) (Tree, error) {
	if maxRows < 1 {
		maxRows = DefaultTreeRows
	}
	ch, err := Walk(ctx, r, space, seq, WalkLimit)
	if err != nil {
		return Tree{}, err
	}
	t, err := treeRoot(ctx, r, space, ch)
	if err != nil {
		return Tree{}, err
	}
	level := t.Commits
	for depth := 0; len(level) > 0; depth++ {
		if err := t.addDeliveries(ctx, r, space, level); err != nil {
			return Tree{}, err
		}
		budget := maxRows - len(t.Commits)
		if depth == WalkLimit || budget <= 0 {
			more, err := hasCaused(ctx, r, space, level)
			t.Truncated = t.Truncated || more
			return t, err
		}
		if level, err = caused(ctx, r, space, level, budget+1); err != nil {
			return Tree{}, err
		}
		if len(level) > budget {
			level, t.Truncated = level[:budget], true
		}
		t.Commits = append(t.Commits, level...)
	}
	return t, nil
}

// treeRoot starts the tree of a chain at its last retained link.
func treeRoot(ctx context.Context, r Reader, space string, ch Chain) (Tree, error) {
	t := Tree{Seq: ch.Seq, Start: ch.Start}
	root := ch.Links[len(ch.Links)-1]
	if root.Pruned {
		t.Pruned = true
		root = ch.Links[len(ch.Links)-2]
	}
	t.Root = root.Seq
	if root.Seq == ch.Seq {
		t.Commits = []store.Commit{ch.Start}
		return t, nil
	}
	c, ok, err := readCommit(ctx, r, space, root.Seq)
	if err != nil {
		return Tree{}, err
	}
	if !ok {
		// Pruned between the walk and now: the tree starts at the row.
		t.Root, t.Pruned, t.Commits = ch.Seq, true, []store.Commit{ch.Start}
		return t, nil
	}
	t.Commits = []store.Commit{c}
	return t, nil
}

// addDeliveries appends the deliveries every row of level caused.
func (t *Tree) addDeliveries(ctx context.Context, r TreeReader, space string, level []store.Commit) error {
	for i := range level {
		ds, err := r.DeliveriesAt(ctx, space, level[i].Seq)
		if err != nil {
			return fmt.Errorf("deliveries at %d: %w", level[i].Seq, err)
		}
		t.Deliveries = append(t.Deliveries, ds...)
	}
	return nil
}

// caused returns at most limit rows caused by the rows of level.
func caused(ctx context.Context, r TreeReader, space string, level []store.Commit, limit int) ([]store.Commit, error) {
	seqs := make([]int64, len(level))
	for i := range level {
		seqs[i] = level[i].Seq
	}
	cs, err := r.CommitsCausedBy(ctx, store.CausedParams{Space: space, Causes: seqs, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("rows caused by %v: %w", seqs, err)
	}
	return cs, nil
}

// hasCaused reports whether any row of level caused a row.
func hasCaused(ctx context.Context, r TreeReader, space string, level []store.Commit) (bool, error) {
	cs, err := caused(ctx, r, space, level, 1)
	return len(cs) > 0, err
}
