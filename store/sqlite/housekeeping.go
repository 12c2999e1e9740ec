package sqlite

import (
	"context"
	"time"
)

// sqlSeqBefore walks the retained commits of a space in seq order and
// stops at the first one not older than ?2; it reads the space row in
// the same statement, so head and commits agree.
var sqlSeqBefore = `SELECT coalesce((SELECT c.seq - 1 FROM commits AS c
WHERE ` + ridRange("c.rid", ridBase("spaces.num"), "spaces.horizon", sqlLastSeq) + ` AND c.ts >= ?2
ORDER BY c.rid LIMIT 1), ` + spaceHead + `)
FROM spaces WHERE spaces.id = ?1`

const (
	// sqlExpireReceipts deletes the oldest receipts created before ?1, at
	// most ?2 of them, through the receipts_created index.
	sqlExpireReceipts = `DELETE FROM receipts WHERE (space, mutation_id) IN (
SELECT space, mutation_id FROM receipts WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)`
)

// SpaceSeqBefore returns the last seq before the first retained commit not
// older than before, or the head when every retained commit is older;
// ErrNotFound if the space is missing.
func (s *Store) SpaceSeqBefore(ctx context.Context, space string, before time.Time) (int64, error) {
	row, err := s.rqueryRow(ctx, sqlSeqBefore, space, micros(before))
	if err != nil {
		return 0, wrap("space seq before", err)
	}
	var seq int64
	return seq, wrap("space seq before", row.Scan(&seq))
}

// ReceiptsExpire deletes at most limit stored receipts created before
// before, oldest first, and returns how many it deleted.
func (s *Store) ReceiptsExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	var n int64
	err := s.writeTx(ctx, func(tx *connTx) error {
		res, err := tx.ExecContext(ctx, sqlExpireReceipts, micros(before), limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), wrap("expire receipts", err)
}
