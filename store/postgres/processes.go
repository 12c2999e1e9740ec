package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// errEmptyOwner refuses a process beat of nobody.
var errEmptyOwner = errors.New("empty process owner")

// ProcessBeat records that owner is alive until now+ttl, removes
// processes expired for longer than ttl, and returns the owners alive at
// now (expiry >= now) in bytewise order. The three statements go as one
// batch, which PostgreSQL runs as one implicit transaction.
func (s *Store) ProcessBeat(ctx context.Context, owner string, now time.Time, ttl time.Duration) ([]string, error) {
	if owner == "" {
		return nil, wrap("process beat", errEmptyOwner)
	}
	const (
		up = `INSERT INTO processes (owner, expires) VALUES ($1, $2)
			ON CONFLICT (owner) DO UPDATE SET expires = EXCLUDED.expires`
		gc   = `DELETE FROM processes WHERE expires < $1`
		live = `SELECT owner FROM processes WHERE expires >= $1 ORDER BY owner`
	)
	b := &pgx.Batch{}
	b.Queue(up, owner, microUTC(now.Add(ttl)))
	b.Queue(gc, microUTC(now.Add(-max(ttl, 0))))
	b.Queue(live, microUTC(now))
	br := s.pool.SendBatch(ctx, b)
	out, err := readBeat(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, wrap("process beat", err)
	}
	return out, nil
}

// readBeat reads the results of ProcessBeat's batch: two commands, then
// the live owners.
func readBeat(br pgx.BatchResults) ([]string, error) {
	for range 2 {
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if out == nil {
		out = []string{}
	}
	return out, err
}

// ProcessGone removes owner from the live processes.
func (s *Store) ProcessGone(ctx context.Context, owner string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM processes WHERE owner = $1`, owner)
	return wrap("process gone", err)
}
