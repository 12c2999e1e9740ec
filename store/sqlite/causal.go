package sqlite

import (
	"context"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// sqlCausedBy reads the commits caused by the seqs of a JSON array
// through the partial index commits_caused_by (named: the planner would
// rather walk the primary key in seq order, scanning the whole space).
const sqlCausedBy = `SELECT seq, ts, actor, op, entity_id, entity_type, payload, receipt, provenance, changes
FROM commits INDEXED BY commits_caused_by
WHERE space = ?1 AND caused_by IS NOT NULL AND caused_by IN (SELECT value FROM json_each(?2))
ORDER BY seq LIMIT ?3`

// CommitsCausedBy returns the commits whose cause is one of p.Causes, in
// seq order, at most p.Limit (none when <= 0).
func (s *Store) CommitsCausedBy(ctx context.Context, p store.CausedParams) ([]store.Commit, error) {
	if len(p.Causes) == 0 {
		return nil, nil
	}
	causes, err := rowcodec.Marshal(p.Causes)
	if err != nil {
		return nil, wrap("commits caused by: encode", err)
	}
	return s.commits(ctx, "commits caused by", sqlCausedBy, p.Space, causes, limitArg(p.Limit))
}
