package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/eddy-run/eddy/store"
)

var _ store.RootCountStore = (*Store)(nil)

const (
	sqlRootCounts = `SELECT root, rows, parked, last_seq FROM root_counts
WHERE space = ?1 AND root IN (SELECT value FROM json_each(?2))`
	sqlRootCountAdd = `INSERT INTO root_counts (space, root, rows, parked, last_seq) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (space, root) DO UPDATE SET rows = root_counts.rows + excluded.rows,
parked = max(root_counts.parked, excluded.parked), last_seq = max(root_counts.last_seq, excluded.last_seq)`
	sqlPruneRootCounts = `DELETE FROM root_counts WHERE space = ? AND root <= ?2 AND last_seq <= ?2`
)

// RootCounts returns the causal budget counters of the named roots.
func (s *Store) RootCounts(ctx context.Context, space string, roots []int64) (map[int64]store.RootCount, error) {
	if len(roots) == 0 {
		return map[int64]store.RootCount{}, nil
	}
	list, err := json.Marshal(roots)
	if err != nil {
		return nil, wrap("root counts", err)
	}
	rows, err := s.rquery(ctx, sqlRootCounts, space, string(list))
	if err != nil {
		return nil, wrap("root counts", err)
	}
	return scanRootCounts(rows, len(roots))
}

// RootCounts returns the counters of the named roots as the transaction
// sees them.
func (t *writeTx) RootCounts(ctx context.Context, roots []int64) (map[int64]store.RootCount, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return nil, fmt.Errorf("sqlite: root counts: %w", err)
	}
	if len(roots) == 0 {
		return map[int64]store.RootCount{}, nil
	}
	list, err := json.Marshal(roots)
	if err != nil {
		return nil, wrap("root counts", err)
	}
	ctx, err = stmtContext(ctx)
	if err != nil {
		return nil, wrap("root counts", err)
	}
	st, err := t.stmt(ctx, sqlRootCounts)
	if err != nil {
		return nil, wrap("root counts", err)
	}
	rows, err := st.QueryContext(ctx, t.space.ID, string(list))
	if err != nil {
		return nil, wrap("root counts", err)
	}
	return scanRootCounts(rows, len(roots))
}

// scanRootCounts reads and closes the rows of sqlRootCounts.
func scanRootCounts(rows *sql.Rows, n int) (map[int64]store.RootCount, error) {
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

// RootCountAdd adds to the causal budget counters of the transaction's
// space, one upsert per root.
func (t *writeTx) RootCountAdd(ctx context.Context, counts []store.RootCount) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return fmt.Errorf("sqlite: add root counts: %w", err)
	}
	for _, c := range counts {
		args := []any{t.space.ID, c.Root, c.Rows, c.Parked, c.LastSeq}
		if err := t.fail(t.run(ctx, sqlRootCountAdd, args)); err != nil {
			return wrap("add root counts", err)
		}
	}
	return nil
}
