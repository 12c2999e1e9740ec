package sqlite

import (
	"context"
	"fmt"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

const tokenCols = `id, hash, space, role, actor, types, scopes, user_name, application, created_at`

func scanToken(sc scanner) (store.Token, error) {
	var (
		t       store.Token
		types   string
		scopes  string
		created int64
	)
	err := sc.Scan(&t.ID, &t.Hash, &t.Space, &t.Role, &t.Actor, &types, &scopes, &t.User, &t.Application, &created)
	if err != nil {
		return t, err
	}
	t.CreatedAt = fromMicros(created)
	if t.Types, err = optStrings(types); err != nil {
		return t, err
	}
	t.Scopes, err = optStrings(scopes)
	return t, err
}

// optStrings decodes an optional list: empty reads back as nil, matching
// the omitempty token fields.
func optStrings(text string) ([]string, error) {
	if text == "[]" {
		return nil, nil
	}
	return rowcodec.DecodeStrings(text)
}

// TokenCreate stores a token; ErrExists if its id or hash is taken. A zero
// CreatedAt is set to now.
func (s *Store) TokenCreate(ctx context.Context, t store.Token) error {
	created := utcMicro(t.CreatedAt)
	if created.IsZero() {
		created = now()
	}
	types, err := rowcodec.EncodeStrings(t.Types)
	if err != nil {
		return wrap("create token: encode", err)
	}
	scopes, err := rowcodec.EncodeStrings(t.Scopes)
	if err != nil {
		return wrap("create token: encode", err)
	}
	res, err := s.wr.exec(ctx, `INSERT INTO tokens (`+tokenCols+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, t.ID, t.Hash, t.Space, t.Role, t.Actor, types, scopes,
		t.User, t.Application, micros(created))
	if err != nil {
		return wrap("create token", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("sqlite: create token %q: %w", t.ID, orExists(err))
	}
	return nil
}

// TokenByHash returns the token with that secret hash or ErrNotFound.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	row, err := s.rqueryRow(ctx, `SELECT `+tokenCols+` FROM tokens WHERE hash = ?`, hash)
	if err != nil {
		return store.Token{}, wrap("token by hash", err)
	}
	t, err := scanToken(row)
	return t, wrap("token by hash", err)
}

// TokenList returns every token ordered by creation time, then id.
func (s *Store) TokenList(ctx context.Context) ([]store.Token, error) {
	rows, err := s.rquery(ctx, `SELECT `+tokenCols+` FROM tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, wrap("list tokens", err)
	}
	defer rows.Close()
	out := []store.Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, wrap("list tokens", err)
		}
		out = append(out, t)
	}
	return out, wrap("list tokens", rows.Err())
}

// TokenDelete revokes a token and advances the token generation in one
// transaction; ErrNotFound if absent.
func (s *Store) TokenDelete(ctx context.Context, id string) error {
	err := s.writeTx(ctx, func(tx *connTx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM tokens WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return orNotFound(err)
		}
		return s.revs.advance(ctx, tx)
	})
	return wrap("delete token", err)
}

// orNotFound is err, or ErrNotFound when a statement met no row.
func orNotFound(err error) error {
	if err != nil {
		return err
	}
	return store.ErrNotFound
}

// TokenGeneration returns a number that grows with every token
// revocation. It reads the database only when the revocation counter
// file moved since this process last did (see revocations).
func (s *Store) TokenGeneration(ctx context.Context) (int64, error) {
	if v, current := s.revs.load(); current {
		return v, nil
	}
	row, err := s.rqueryRow(ctx, `SELECT generation FROM token_generation WHERE id = 1`)
	if err != nil {
		return 0, wrap("token generation", err)
	}
	var g int64
	if err := row.Scan(&g); err != nil {
		return 0, wrap("token generation", err)
	}
	s.revs.observe(g)
	return g, nil
}
