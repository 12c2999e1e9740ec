package postgres

import (
	"time"

	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

const tokenColumns = "id, hash, space, role, actor, types, scopes, user_name, application, created_at"

// scanToken reads one tokens row selected with tokenColumns.
func scanToken(row pgx.Row) (store.Token, error) {
	var t store.Token
	var types, scopes string
	err := row.Scan(&t.ID, &t.Hash, &t.Space, &t.Role, &t.Actor, &types, &scopes, &t.User, &t.Application, &t.CreatedAt)
	if err != nil {
		return t, err
	}
	t.CreatedAt = t.CreatedAt.UTC()
	if t.Types, err = optStrings(types); err != nil {
		return t, err
	}
	t.Scopes, err = optStrings(scopes)
	return t, err
}

// optStrings decodes an optional string list: empty is nil.
func optStrings(s string) ([]string, error) {
	v, err := rowcodec.DecodeStrings(s)
	if len(v) == 0 {
		return nil, err
	}
	return v, err
}

// TokenCreate stores a token (CreatedAt defaults to now); store.ErrExists
// if its id or hash is taken.
func (s *Store) TokenCreate(ctx context.Context, t store.Token) error {
	types, err := rowcodec.EncodeStrings(t.Types)
	if err != nil {
		return fmt.Errorf("postgres: create token: %w", err)
	}
	scopes, err := rowcodec.EncodeStrings(t.Scopes)
	if err != nil {
		return fmt.Errorf("postgres: create token: %w", err)
	}
	const q = "INSERT INTO tokens (" + tokenColumns + ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
	_, err = s.pool.Exec(ctx, q, t.ID, t.Hash, t.Space, t.Role, t.Actor, types, scopes,
		t.User, t.Application, s.orNow(t.CreatedAt))
	return wrap("create token", err)
}

// TokenByHash returns the token with that secret hash or store.ErrNotFound.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	const q = "SELECT " + tokenColumns + " FROM tokens WHERE hash = $1"
	t, err := scanToken(s.pool.QueryRow(ctx, q, hash))
	return t, wrap("token by hash", err)
}

// TokenList returns every token ordered by creation time, then id.
func (s *Store) TokenList(ctx context.Context) ([]store.Token, error) {
	const q = "SELECT " + tokenColumns + " FROM tokens ORDER BY created_at, id"
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		return nil, wrap("list tokens", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Token, error) { return scanToken(r) })
	if out == nil {
		out = []store.Token{}
	}
	return out, wrap("list tokens", err)
}

// TokenDelete revokes a token, advances the token generation and
// notifies TokenChannel in one statement; store.ErrNotFound if absent.
func (s *Store) TokenDelete(ctx context.Context, id string) error {
	const q = `WITH d AS (DELETE FROM tokens WHERE id = $1 RETURNING 1),
		g AS (UPDATE token_generation SET generation = generation + 1
			WHERE id = 1 AND EXISTS (SELECT 1 FROM d) RETURNING 1)
		SELECT count(*) FROM d, g, (SELECT pg_notify('` + TokenChannel + `', '') FROM g) n`
	var n int
	err := s.pool.QueryRow(ctx, q, id).Scan(&n)
	// Even a failed statement may have committed: this process forgets
	// the generation at once, without waiting for the notification.
	s.tokens.invalidate(0)
	if err != nil {
		return wrap("delete token", err)
	}
	if n == 0 {
		return notFound("delete token", id)
	}
	return nil
}

// TokenGeneration returns the count of token revocations. While Listen
// hears TokenChannel it answers from memory, reading the database after
// a revocation's notification, a listener's reconnect, and at least
// every tokenGenerationMaxAge; otherwise it reads the database.
func (s *Store) TokenGeneration(ctx context.Context) (int64, error) {
	g, epoch, ok := s.tokens.cached()
	if ok {
		return g, nil
	}
	readAt := time.Now()
	if err := s.pool.QueryRow(ctx, `SELECT generation FROM token_generation WHERE id = 1`).Scan(&g); err != nil {
		return 0, wrap("token generation", err)
	}
	s.tokens.store(epoch, g, readAt)
	return g, nil
}
