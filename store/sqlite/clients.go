package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/eddy-run/eddy/store"
)

var _ store.ClientStore = (*Store)(nil)

const (
	sqlClientGet   = `SELECT id, owner, last_ordinal, last_seq, updated_at FROM clients WHERE space = ? AND id = ?`
	sqlClientsLoad = `SELECT id, owner, last_ordinal, last_seq, updated_at FROM clients WHERE space = ?1 AND id IN (SELECT value FROM json_each(?2))`
	sqlClientsOf   = `SELECT id, owner, last_ordinal, last_seq, updated_at FROM clients WHERE space = ? AND owner = ?`
	sqlClientPut   = `INSERT INTO clients (space, id, owner, last_ordinal, last_seq, updated_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (space, id) DO UPDATE SET owner = excluded.owner, last_ordinal = excluded.last_ordinal,
last_seq = excluded.last_seq, updated_at = excluded.updated_at`
	sqlClientsExpire = `DELETE FROM clients WHERE (space, id) IN (
SELECT space, id FROM clients WHERE updated_at < ?1 ORDER BY updated_at LIMIT ?2)`
)

// scanClient reads one clients row.
func scanClient(space string, sc scanner) (store.PushClient, error) {
	c := store.PushClient{Space: space}
	var us int64
	err := sc.Scan(&c.ID, &c.Owner, &c.LastOrdinal, &c.LastSeq, &us)
	c.UpdatedAt = fromMicros(us)
	return c, err
}

// ClientGet returns a push client or ErrNotFound.
func (s *Store) ClientGet(ctx context.Context, space, id string) (store.PushClient, error) {
	row, err := s.rqueryRow(ctx, sqlClientGet, space, id)
	if err != nil {
		return store.PushClient{}, wrap("get client", err)
	}
	c, err := scanClient(space, row)
	return c, wrap("get client", err)
}

// ClientsOf returns the clients of space owned by owner.
func (s *Store) ClientsOf(ctx context.Context, space, owner string) (map[string]store.PushClient, error) {
	rows, err := s.rquery(ctx, sqlClientsOf, space, owner)
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
	var n int64
	err := s.writeTx(ctx, func(tx *connTx) error {
		res, err := tx.ExecContext(ctx, sqlClientsExpire, micros(before), limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), wrap("expire clients", err)
}

// loadClients reads the named push clients under the write lock.
func (t *writeTx) loadClients(ctx context.Context, space string, ids []string) (map[string]store.PushClient, error) {
	out := make(map[string]store.PushClient, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	st, err := t.stmt(ctx, sqlClientsLoad)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, space, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanClient(space, rows)
		if err != nil {
			return nil, err
		}
		out[c.ID] = c
	}
	return out, rows.Err()
}

// Clients are the push clients loaded by WriteBegin.
func (t *writeTx) Clients() map[string]store.PushClient { return t.clients }

// ClientPut creates or replaces a push client's row.
func (t *writeTx) ClientPut(ctx context.Context, c store.PushClient) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usable(); err != nil {
		return fmt.Errorf("sqlite: put client: %w", err)
	}
	args := []any{t.space.ID, c.ID, c.Owner, c.LastOrdinal, c.LastSeq, micros(c.UpdatedAt)}
	return wrap("put client", t.fail(t.run(ctx, sqlClientPut, args)))
}
