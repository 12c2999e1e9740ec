package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// CommitLanded reports whether the commit at seq of space carries writeID.
// It first takes the space row lock (FOR UPDATE), so a write transaction
// still running on a connection the client lost has ended, committed or
// rolled back, before the commit row is read.
func (s *Store) CommitLanded(ctx context.Context, space string, seq, writeID int64) (bool, error) {
	var landed bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var horizon int64
		err := tx.QueryRow(ctx, `SELECT horizon FROM spaces WHERE id = $1 FOR UPDATE`, space).Scan(&horizon)
		if err != nil {
			return fmt.Errorf("space %s: %w", space, err)
		}
		var wid *int64
		err = tx.QueryRow(ctx, `SELECT write_id FROM commits WHERE space = $1 AND seq = $2`, space, seq).Scan(&wid)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && seq <= horizon:
			return fmt.Errorf("commit %d of %s was pruned", seq, space)
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		landed = wid != nil && *wid == writeID
		return nil
	})
	return landed, wrap("commit landed", err)
}
