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
	if len(roots) == 0 {
		return map[int64]store.RootCount{}, nil
	}
	rows, err := s.pool.Query(ctx, rootCountsQ, space, roots)
	if err != nil {
		return nil, wrap("root counts", err)
	}
	return scanRootCounts(rows, len(roots))
}

// RootCounts returns the counters of the named roots as the transaction
// sees them: the stored ones, read on its connection, plus the additions
// it buffered. An optimistic transaction has sent nothing yet, so the
// read runs before its BEGIN; that is the state it commits on, since
// every counter change appends commits and the claim refuses a moved
// head.
func (tx *writeTx) RootCounts(ctx context.Context, roots []int64) (map[int64]store.RootCount, error) {
	if tx.conn == nil {
		return nil, errTxDone
	}
	out := map[int64]store.RootCount{}
	if len(roots) == 0 {
		return out, nil
	}
	rows, err := tx.conn.Query(ctx, rootCountsQ, tx.space.ID, roots)
	if err != nil {
		return nil, wrap("root counts", err)
	}
	if out, err = scanRootCounts(rows, len(roots)); err != nil {
		return nil, err
	}
	want := make(map[int64]bool, len(roots))
	for _, r := range roots {
		want[r] = true
	}
	for _, add := range tx.rootCounts {
		if !want[add.Root] {
			continue
		}
		c := out[add.Root]
		c.Root = add.Root
		c.Rows += add.Rows
		c.Parked = c.Parked || add.Parked
		c.LastSeq = max(c.LastSeq, add.LastSeq)
		out[add.Root] = c
	}
	return out, nil
}

// scanRootCounts reads and closes the rows of rootCountsQ.
func scanRootCounts(rows pgx.Rows, n int) (map[int64]store.RootCount, error) {
	defer rows.Close()
	out := make(map[int64]store.RootCount, n)
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
