package changelog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// ExpireBatch bounds how many stored receipts one statement of Housekeep
// deletes; a pass repeats it until a batch comes back short. Tests may
// shrink it.
var ExpireBatch = 1000

// Retention is a retention policy: how much history every space keeps.
// Zero (or negative) fields prune nothing; when both are set, the one that
// prunes further wins.
type Retention struct {
	// MaxAge prunes the commits older than this. Commit timestamps are not
	// guaranteed monotonic across processes, so a space is pruned through
	// the last commit of the unbroken run of old commits above its
	// horizon: the first younger commit stops it.
	MaxAge time.Duration
	// MaxRows keeps the newest MaxRows commits of a space (through =
	// head - MaxRows).
	MaxRows int64
	// Limit, if set, caps how far a space may be pruned (for example the
	// trigger engine's PruneLimit: rows triggers have not finished with).
	Limit func(ctx context.Context, space string) (int64, error)
}

// Prunes reports whether the policy prunes anything at all.
func (r Retention) Prunes() bool { return r.MaxAge > 0 || r.MaxRows > 0 }

// HousekeepReport says what one Housekeep pass did.
type HousekeepReport struct {
	// Spaces is how many spaces the pass examined.
	Spaces int
	// Pruned maps every space the pass pruned to its new horizon.
	Pruned map[string]int64
	// PrunedCommits is how many commits the pass pruned, in all spaces.
	PrunedCommits int64
	// ReceiptsExpired is how many stored receipts, older than the
	// idempotency window, the pass deleted.
	ReceiptsExpired int
	// ClientsExpired is how many push clients, idle past the client
	// retention, the pass forgot.
	ClientsExpired int
}

// Housekeep runs one housekeeping pass: it prunes every space through the
// seq policy allows (through Prune, so the horizon rules hold; never past
// the head) and then deletes the stored receipts older than the
// idempotency window, in batches of ExpireBatch. A space that fails does
// not stop the others; the errors are joined.
func (l *Log) Housekeep(ctx context.Context, policy Retention) (HousekeepReport, error) {
	now := l.now()
	rep := HousekeepReport{Pruned: map[string]int64{}}
	var errs []error
	if policy.Prunes() {
		sps, err := l.Spaces(ctx)
		if err != nil {
			return rep, err
		}
		for _, sp := range sps {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			rep.Spaces++
			if err := l.retain(ctx, sp, policy, now, &rep); err != nil {
				errs = append(errs, fmt.Errorf("space %s: %w", sp.ID, err))
			}
		}
	}
	n, err := l.expireReceipts(ctx, now.Add(-l.opts.IdempotencyWindow))
	rep.ReceiptsExpired = n
	errs = append(errs, err)
	rep.ClientsExpired, err = l.expireClients(ctx, now.Add(-l.opts.ClientRetention))
	return rep, errors.Join(append(errs, err)...)
}

// retain prunes one space as policy allows and records it in rep.
func (l *Log) retain(ctx context.Context, sp store.Space, policy Retention, now time.Time, rep *HousekeepReport) error {
	through, err := l.retainThrough(ctx, sp, policy, now)
	if err != nil || through <= sp.Horizon {
		return err
	}
	pruned, err := l.Prune(ctx, sp.ID, through)
	if problem.CodeOf(err) == problem.BadRequest {
		// Another pruner (a process sharing the database, an admin) moved
		// the horizon past through meanwhile: nothing is left to do.
		if cur, gerr := l.Space(ctx, sp.ID); gerr == nil && cur.Horizon >= through {
			return nil
		}
	}
	if err != nil {
		return err
	}
	rep.Pruned[sp.ID] = pruned.Horizon
	rep.PrunedCommits += pruned.Horizon - sp.Horizon
	return nil
}

// retainThrough returns the seq policy lets a space be pruned through:
// the larger of what MaxRows and MaxAge allow, at most the head.
func (l *Log) retainThrough(ctx context.Context, sp store.Space, policy Retention, now time.Time) (int64, error) {
	through := sp.Horizon
	if policy.MaxRows > 0 {
		through = max(through, sp.Head-policy.MaxRows)
	}
	if policy.MaxAge > 0 {
		aged, err := l.st.SpaceSeqBefore(ctx, sp.ID, now.Add(-policy.MaxAge))
		if errors.Is(err, store.ErrNotFound) {
			return sp.Horizon, nil // deleted meanwhile
		}
		if err != nil {
			return 0, fmt.Errorf("find aged commits: %w", err)
		}
		through = max(through, aged)
	}
	through = min(through, sp.Head)
	if policy.Limit != nil && through > sp.Horizon {
		limit, err := policy.Limit(ctx, sp.ID)
		if err != nil {
			return 0, fmt.Errorf("prune limit: %w", err)
		}
		through = max(min(through, limit), sp.Horizon)
	}
	return through, nil
}

// expireReceipts deletes the stored receipts created before cutoff, a
// batch at a time, and returns how many it deleted.
func (l *Log) expireReceipts(ctx context.Context, cutoff time.Time) (int, error) {
	total := 0
	for {
		n, err := l.st.ReceiptsExpire(ctx, cutoff, ExpireBatch)
		total += n
		if err != nil {
			return total, fmt.Errorf("expire receipts: %w", err)
		}
		if n < ExpireBatch {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
