package sqlite

import (
	"context"
	"time"
)

// ProcessBeat records that owner is alive until now+ttl, removes
// processes expired for longer than ttl, and returns the owners alive at
// now (expiry >= now) in bytewise order, in one transaction.
func (s *Store) ProcessBeat(ctx context.Context, owner string, now time.Time, ttl time.Duration) ([]string, error) {
	if owner == "" {
		return nil, wrap("process beat", errEmptyOwner)
	}
	var out []string
	err := s.writeTx(ctx, func(tx *connTx) error {
		const up = `INSERT INTO processes (owner, expires) VALUES (?, ?)
ON CONFLICT (owner) DO UPDATE SET expires = excluded.expires`
		if _, err := tx.ExecContext(ctx, up, owner, micros(now.Add(ttl))); err != nil {
			return err
		}
		const gc = `DELETE FROM processes WHERE expires < ?`
		if _, err := tx.ExecContext(ctx, gc, micros(now.Add(-max(ttl, 0)))); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT owner FROM processes WHERE expires >= ? ORDER BY owner`, micros(now))
		if err != nil {
			return err
		}
		out, err = collect(rows, func(sc scanner) (string, error) {
			var o string
			return o, sc.Scan(&o)
		})
		return err
	})
	return out, wrap("process beat", err)
}

// ProcessGone removes owner from the live processes.
func (s *Store) ProcessGone(ctx context.Context, owner string) error {
	err := s.writeTx(ctx, func(tx *connTx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM processes WHERE owner = ?`, owner)
		return err
	})
	return wrap("process gone", err)
}
