package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

const commitColumns = rowColumns + ", receipt, provenance, changes"

// The reads of Commits and RawCommits, with receipts and without.
const (
	commitsQuery = "SELECT " + commitColumns + ` FROM commits
		WHERE space = $1 AND seq > $2 ORDER BY seq LIMIT $3`
	commitsLeanQuery = "SELECT " + rowColumns + `, '', provenance, changes FROM commits
		WHERE space = $1 AND seq > $2 ORDER BY seq LIMIT $3`
)

// scanRawCommit reads one commits row selected with commitColumns,
// leaving its JSON columns encoded.
func scanRawCommit(row pgx.Row, raw *rowcodec.RawCommit) error {
	c := &raw.Commit
	var payload string
	err := row.Scan(&c.Seq, &c.TS, &c.Actor, &c.Op, &c.EntityID, &c.Type, &payload, &raw.Receipt, &raw.Provenance, &raw.Changes)
	if err != nil {
		return err
	}
	c.TS = c.TS.UTC()
	c.Payload = json.RawMessage(payload)
	return nil
}

// Commits returns at most p.Limit whole commits with seq > p.After in seq
// order, each with its changes by ordinal. One statement reads the page,
// so it is one snapshot: a concurrent prune cannot split it.
func (s *Store) Commits(ctx context.Context, p store.CommitsParams) ([]store.Commit, error) {
	query := commitsQuery
	if p.NoReceipts {
		query = commitsLeanQuery
	}
	return s.readCommits(ctx, "commits", query, p.Space, p.After, limitArg(p.Limit))
}

// RawCommits is Commits with the JSON columns left as stored.
func (s *Store) RawCommits(ctx context.Context, p store.CommitsParams) ([]store.RawCommit, error) {
	query := commitsQuery
	if p.NoReceipts {
		query = commitsLeanQuery
	}
	raws, err := s.readRawCommits(ctx, "raw commits", query, p.Space, p.After, limitArg(p.Limit))
	if err != nil {
		return nil, err
	}
	return rowcodec.RawAll(raws), nil
}
