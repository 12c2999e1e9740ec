package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// CommitLanded reports whether the commit at seq of space carries writeID.
// It reads through the write connection in a BEGIN IMMEDIATE transaction,
// so it waits for any write transaction of this process or another to end.
func (s *Store) CommitLanded(ctx context.Context, space string, seq, writeID int64) (bool, error) {
	var landed bool
	err := s.writeTx(ctx, func(tx *connTx) error {
		var horizon int64
		if err := tx.QueryRowContext(ctx, `SELECT horizon FROM spaces WHERE id = ?`, space).Scan(&horizon); err != nil {
			return fmt.Errorf("space %q: %w", space, err)
		}
		var wid sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT write_id FROM commits WHERE rid = `+ridBaseOf("?1")+` + ?2`, space, seq).Scan(&wid)
		switch {
		case errors.Is(err, sql.ErrNoRows) && seq <= horizon:
			return fmt.Errorf("commit %d of %s was pruned", seq, space)
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		landed = wid.Valid && wid.Int64 == writeID
		return nil
	})
	return landed, wrap("commit landed", err)
}
