package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// CommitsCausedBy returns the commits whose cause is one of p.Causes, in
// seq order, at most p.Limit (none when <= 0), through the partial index
// commits_caused_by_idx.
func (s *Store) CommitsCausedBy(ctx context.Context, p store.CausedParams) ([]store.Commit, error) {
	if len(p.Causes) == 0 {
		return nil, nil
	}
	const q = "SELECT " + commitColumns + ` FROM commits
		WHERE space = $1 AND caused_by IS NOT NULL AND caused_by = ANY($2) ORDER BY seq LIMIT $3`
	return s.readCommits(ctx, "commits caused by", q, p.Space, p.Causes, limitArg(p.Limit))
}

// readCommits runs a read of whole commits (commitColumns) and decodes
// them; op names it in errors.
func (s *Store) readCommits(ctx context.Context, op, query string, args ...any) ([]store.Commit, error) {
	raws, err := s.readRawCommits(ctx, op, query, args...)
	if err != nil {
		return nil, err
	}
	commits, err := rowcodec.DecodeAll(raws)
	return commits, wrap(op, err)
}

// readRawCommits runs a read of whole commits (commitColumns), leaving
// their JSON columns encoded.
func (s *Store) readRawCommits(ctx context.Context, op, query string, args ...any) ([]rowcodec.RawCommit, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	raws, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (rowcodec.RawCommit, error) {
		var raw rowcodec.RawCommit
		return raw, scanRawCommit(r, &raw)
	})
	return raws, wrap(op, err)
}
