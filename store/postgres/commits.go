package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

const commitColumns = rowColumns + ", receipt, provenance"

// scanCommit reads one commits row selected with commitColumns; its
// changes are filled in separately.
func scanCommit(row pgx.Row) (store.Commit, error) {
	var c store.Commit
	var payload, receipt, prov string
	err := row.Scan(&c.Seq, &c.TS, &c.Actor, &c.Op, &c.EntityID, &c.Type, &payload, &receipt, &prov)
	if err != nil {
		return c, err
	}
	c.TS = c.TS.UTC()
	c.Payload = json.RawMessage(payload)
	c.Changes = []store.Change{}
	if c.Receipt, err = decodeReceipt(receipt); err != nil {
		return c, err
	}
	if err := json.Unmarshal([]byte(prov), &c.Provenance); err != nil {
		return c, fmt.Errorf("decode provenance: %w", err)
	}
	return c, nil
}

// Commits returns at most p.Limit whole commits with seq > p.After in seq
// order, each with its changes by ordinal. The commits and their changes
// are read by two queries in one snapshot, one round trip.
func (s *Store) Commits(ctx context.Context, p store.CommitsParams) ([]store.Commit, error) {
	const commitsQ = "SELECT " + commitColumns + ` FROM commits
		WHERE space = $1 AND seq > $2 ORDER BY seq LIMIT $3`
	const changesQ = "SELECT " + changeColumns + ` FROM changes
		WHERE space = $1 AND seq > $2 AND seq <= (
			SELECT max(seq) FROM (
				SELECT seq FROM commits WHERE space = $1 AND seq > $2 ORDER BY seq LIMIT $3) page)
		ORDER BY seq, ordinal`
	var commits []store.Commit
	index := map[int64]int{}
	err := s.readSnapshot(ctx, func(b *pgx.Batch) {
		args := []any{p.Space, p.After, limitArg(p.Limit)}
		b.Queue(commitsQ, args...).Query(func(rows pgx.Rows) error {
			var err error
			commits, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Commit, error) { return scanCommit(r) })
			for i, c := range commits {
				index[c.Seq] = i
			}
			return err
		})
		b.Queue(changesQ, args...).Query(func(rows pgx.Rows) error {
			return attachChanges(rows, commits, index)
		})
	})
	if err != nil {
		return nil, wrap("commits", err)
	}
	if commits == nil {
		commits = []store.Commit{}
	}
	return commits, nil
}

// attachChanges appends each changes row to its commit.
func attachChanges(rows pgx.Rows, commits []store.Commit, index map[int64]int) error {
	for rows.Next() {
		seq, ch, err := scanChange(rows)
		if err != nil {
			return err
		}
		if i, ok := index[seq]; ok {
			commits[i].Changes = append(commits[i].Changes, ch)
		}
	}
	return rows.Err()
}
