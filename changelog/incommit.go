package changelog

import (
	"context"
	"errors"
	"fmt"

	"github.com/eddy-run/eddy/store"
)

// InCommitGroup is what an InCommit hook judges: the commits one group
// transaction appends to Space, right after Prev (the head the
// transaction started from).
type InCommitGroup struct {
	Space   string
	Prev    int64
	Commits []store.Commit
}

// InCommit runs inside every group transaction that appends commits,
// after its commits, receipts and Effects are written and before it
// commits: the trigger engine judges the commits there and writes their
// deliveries and cursor advances into tx (see Log.SetInCommit). It must
// not block on anything a writer of the space may hold.
//
// finish, when non-nil, is called exactly once, after the transaction
// ended, with nil when it committed and else the reason it did not; a
// hook that judged nothing may still ask for it (to learn that the group
// committed). wrote reports whether the hook wrote into tx: only then can
// a fenced commit be its doing. An error (a fenced advance, say) never
// fails the group's writes: the group is rolled back and run again
// without the hook.
type InCommit func(ctx context.Context, tx store.WriteTx, g InCommitGroup) (finish func(error), wrote bool, err error)

// SetInCommit installs the hook every later group transaction runs (nil:
// none). It is safe to call while writes are under way.
func (l *Log) SetInCommit(h InCommit) {
	if h == nil {
		l.inCommit.Store(nil)
		return
	}
	l.inCommit.Store(&h)
}

// inCommitError is a group transaction that failed because of its
// InCommit hook's writes (or may have): the group runs again without it.
type inCommitError struct{ err error }

func (e *inCommitError) Error() string { return "in-commit hook: " + e.err.Error() }
func (e *inCommitError) Unwrap() error { return e.err }

// runInCommit calls the hook on the group's commits when it has any.
// It returns finish (never nil) for the caller to call with the
// transaction's outcome, and whether the hook judged anything (wrote
// into the transaction).
func (l *Log) runInCommit(ctx context.Context, g *groupState, space string, hooked bool) (func(error), bool, error) {
	nop := func(error) {}
	hp := l.inCommit.Load()
	prev := g.tx.Space().Head
	if !hooked || hp == nil || g.head == prev {
		return nop, false, nil
	}
	cs := make([]store.Commit, len(g.commits))
	for i, pc := range g.commits {
		cs[i] = pc.commit
		// As the evaluator reads them (PullOptions.NoReceipts).
		cs[i].Receipt = store.Receipt{}
	}
	finish, judged, err := (*hp)(ctx, g.tx, InCommitGroup{Space: space, Prev: prev, Commits: cs})
	if finish == nil {
		finish = nop
	}
	if err != nil {
		return finish, judged, &inCommitError{err: fmt.Errorf("judge commits %d-%d: %w", prev+1, g.head, err)}
	}
	return finish, judged, nil
}

// commitFailedByHook reports a Commit failure the hook's writes may have
// caused: a fence (which proves nothing was written).
func commitFailedByHook(err error) bool { return errors.Is(err, store.ErrFenced) }
