package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

var _ store.ClientStore = (*Store)(nil)

const (
	clientQ    = `SELECT id, owner, last_ordinal, last_seq, updated_at FROM clients WHERE space = $1 AND id = $2`
	clientsOfQ = `SELECT id, owner, last_ordinal, last_seq, updated_at FROM clients WHERE space = $1 AND owner = $2`
	clientPutQ = `INSERT INTO clients (space, id, owner, last_ordinal, last_seq, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (space, id) DO UPDATE SET owner = excluded.owner, last_ordinal = excluded.last_ordinal,
last_seq = excluded.last_seq, updated_at = excluded.updated_at`
	clientsExpQ = `DELETE FROM clients WHERE (space, id) IN (
SELECT space, id FROM clients WHERE updated_at < $1 ORDER BY updated_at LIMIT $2)`
)

// scanClient reads one clients row.
func scanClient(space string, row pgx.Row) (store.PushClient, error) {
	c := store.PushClient{Space: space}
	err := row.Scan(&c.ID, &c.Owner, &c.LastOrdinal, &c.LastSeq, &c.UpdatedAt)
	c.UpdatedAt = c.UpdatedAt.UTC()
	return c, err
}

// ClientGet returns a push client or ErrNotFound.
func (s *Store) ClientGet(ctx context.Context, space, id string) (store.PushClient, error) {
	c, err := scanClient(space, s.pool.QueryRow(ctx, clientQ, space, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.PushClient{}, notFound("get client", "client "+id)
	}
	return c, wrap("get client", err)
}

// ClientsOf returns the clients of space owned by owner.
func (s *Store) ClientsOf(ctx context.Context, space, owner string) (map[string]store.PushClient, error) {
	rows, err := s.pool.Query(ctx, clientsOfQ, space, owner)
	if err != nil {
		return nil, wrap("clients of owner", err)
	}
	defer rows.Close()
	out := map[string]store.PushClient{}
	for rows.Next() {
		c, err := scanClient(space, rows)
		if err != nil {
			return nil, wrap("clients of owner", err)
		}
		out[c.ID] = c
	}
	return out, wrap("clients of owner", rows.Err())
}

// ClientsExpire deletes at most limit clients last updated before
// before.
func (s *Store) ClientsExpire(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, clientsExpQ, before, limit)
	if err != nil {
		return 0, wrap("expire clients", err)
	}
	return int(tag.RowsAffected()), nil
}

// queueClientLoads adds the loads of the named clients to the opening
// batch.
func (tx *writeTx) queueClientLoads(b *pgx.Batch, space string, ids []string) {
	tx.clients = make(map[string]store.PushClient, len(ids))
	for _, id := range ids {
		b.Queue(clientQ, space, id).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				c, err := scanClient(space, rows)
				if err != nil {
					return err
				}
				tx.clients[c.ID] = c
			}
			return rows.Err()
		})
	}
}

// Clients are the push clients loaded by WriteBegin.
func (tx *writeTx) Clients() map[string]store.PushClient { return tx.clients }

// ClientPut buffers a push client's row; Commit writes it.
func (tx *writeTx) ClientPut(_ context.Context, c store.PushClient) error {
	if tx.conn == nil {
		return errTxDone
	}
	c.Space = tx.space.ID
	c.UpdatedAt = microUTC(c.UpdatedAt)
	tx.clientPuts = append(tx.clientPuts, c)
	return nil
}

// queueClientPuts adds the buffered client rows to the commit batch.
func (tx *writeTx) queueClientPuts(b *pgx.Batch) {
	for _, c := range tx.clientPuts {
		b.Queue(clientPutQ, c.Space, c.ID, c.Owner, c.LastOrdinal, c.LastSeq, c.UpdatedAt)
	}
}
