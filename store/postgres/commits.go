package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

const commitColumns = rowColumns + ", receipt, provenance, changes"

// scanCommit reads one commits row selected with commitColumns.
func scanCommit(row pgx.Row) (store.Commit, error) {
	var c store.Commit
	var payload, receipt, prov, changes string
	err := row.Scan(&c.Seq, &c.TS, &c.Actor, &c.Op, &c.EntityID, &c.Type, &payload, &receipt, &prov, &changes)
	if err != nil {
		return c, err
	}
	c.TS = c.TS.UTC()
	c.Payload = json.RawMessage(payload)
	if c.Receipt, err = rowcodec.DecodeReceipt(receipt); err != nil {
		return c, err
	}
	if err := json.Unmarshal([]byte(prov), &c.Provenance); err != nil {
		return c, fmt.Errorf("decode provenance: %w", err)
	}
	if c.Changes, err = rowcodec.DecodeChanges(changes); err != nil {
		return c, fmt.Errorf("seq %d: %w", c.Seq, err)
	}
	return c, nil
}

// Commits returns at most p.Limit whole commits with seq > p.After in seq
// order, each with its changes by ordinal. One statement reads the page,
// so it is one snapshot: a concurrent prune cannot split it.
func (s *Store) Commits(ctx context.Context, p store.CommitsParams) ([]store.Commit, error) {
	const q = "SELECT " + commitColumns + ` FROM commits
		WHERE space = $1 AND seq > $2 ORDER BY seq LIMIT $3`
	rows, err := s.pool.Query(ctx, q, p.Space, p.After, limitArg(p.Limit))
	if err != nil {
		return nil, wrap("commits", err)
	}
	commits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Commit, error) { return scanCommit(r) })
	if err != nil {
		return nil, wrap("commits", err)
	}
	if commits == nil {
		commits = []store.Commit{}
	}
	return commits, nil
}
