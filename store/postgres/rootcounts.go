package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

var _ store.RootCountStore = (*Store)(nil)

const (
	rootCountsQ   = `SELECT root, rows, parked, last_seq FROM root_counts WHERE space = $1 AND root = ANY($2)`
	rootCountAddQ = `INSERT INTO root_counts (space, root, rows, parked, last_seq) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (space, root) DO UPDATE SET rows = root_counts.rows + excluded.rows,
parked = root_counts.parked OR excluded.parked, last_seq = GREATEST(root_counts.last_seq, excluded.last_seq)`
	rootCountsPruneQ = `DELETE FROM root_counts WHERE space = $1 AND root <= $2 AND last_seq <= $2`
)

// RootCounts returns the causal budget counters of the named roots.
func (s *Store) RootCounts(ctx context.Context, space string, roots []int64) (map[int64]store.RootCount, error) {
	out := make(map[int64]store.RootCount, len(roots))
	if len(roots) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, rootCountsQ, space, roots)
	if err != nil {
		return nil, wrap("root counts", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c store.RootCount
		if err := rows.Scan(&c.Root, &c.Rows, &c.Parked, &c.LastSeq); err != nil {
			return nil, wrap("root counts", err)
		}
		out[c.Root] = c
	}
	return out, wrap("root counts", rows.Err())
}

// RootCountAdd buffers additions to the causal budget counters of the
// transaction's space; Commit writes them, one upsert per root.
func (tx *writeTx) RootCountAdd(_ context.Context, counts []store.RootCount) error {
	if tx.conn == nil {
		return errTxDone
	}
	tx.rootCounts = append(tx.rootCounts, counts...)
	return nil
}

// queueRootCounts adds the buffered counter additions to the commit
// batch.
func (tx *writeTx) queueRootCounts(b *pgx.Batch) {
	for _, c := range tx.rootCounts {
		b.Queue(rootCountAddQ, tx.space.ID, c.Root, c.Rows, c.Parked, c.LastSeq)
	}
}
