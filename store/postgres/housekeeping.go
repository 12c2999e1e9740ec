package postgres

import (
	"context"
	"time"
)

const (
	// seqBeforeQ walks the retained commits of a space in seq order along
	// the primary key and stops at the first one not older than $2; it
	// reads the space row in the same statement, so head and commits agree.
	seqBeforeQ = `SELECT coalesce((SELECT c.seq - 1 FROM commits c
		WHERE c.space = s.id AND c.seq > s.horizon AND c.ts >= $2 ORDER BY c.seq LIMIT 1), s.head)
		FROM spaces s WHERE s.id = $1`

	// expireReceiptsQ deletes the oldest receipts created before $1, at
	// most $2 of them, through receipts_created_idx. It skips rows a
	// writer holds (they are being renewed) and re-checks the age of the
	// row it deletes.
	expireReceiptsQ = `DELETE FROM receipts WHERE created_at < $1 AND (space, mutation_id) IN (
		SELECT space, mutation_id FROM receipts WHERE created_at < $1
		ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`
)

// SpaceSeqBefore returns the last seq before the first retained commit not
// older than before, or the head when every retained commit is older;
// store.ErrNotFound if the space is missing.
func (s *Store) SpaceSeqBefore(ctx context.Context, space string, before time.Time) (int64, error) {
	var seq int64
	err := s.pool.QueryRow(ctx, seqBeforeQ, space, before).Scan(&seq)
	return seq, wrap("space seq before", err)
}

// ReceiptsExpire deletes at most limit stored receipts created before
// before, oldest first, and returns how many it deleted.
func (s *Store) ReceiptsExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, expireReceiptsQ, before, limit)
	if err != nil {
		return 0, wrap("expire receipts", err)
	}
	return int(tag.RowsAffected()), nil
}
