package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

// DefinitionPut creates or replaces a definition and reports whether it
// created it.
func (s *Store) DefinitionPut(ctx context.Context, space, kind string, d store.Definition) (bool, error) {
	const q = `INSERT INTO definitions (space, kind, name, def, updated_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (space, kind, name) DO UPDATE SET def = EXCLUDED.def, updated_at = EXCLUDED.updated_at
		RETURNING (xmax = 0)`
	var created bool
	err := s.pool.QueryRow(ctx, q, space, kind, d.Name, string(d.Def), s.orNow(d.UpdatedAt)).Scan(&created)
	return created, wrap("put definition", err)
}

func scanDefinition(row pgx.Row) (store.Definition, error) {
	var d store.Definition
	var def string
	err := row.Scan(&d.Name, &def, &d.UpdatedAt)
	d.Def, d.UpdatedAt = []byte(def), d.UpdatedAt.UTC()
	return d, err
}

// DefinitionGet returns a definition or store.ErrNotFound.
func (s *Store) DefinitionGet(ctx context.Context, space, kind, name string) (store.Definition, error) {
	const q = "SELECT name, def, updated_at FROM definitions WHERE space = $1 AND kind = $2 AND name = $3"
	d, err := scanDefinition(s.pool.QueryRow(ctx, q, space, kind, name))
	return d, wrap("get definition", err)
}

// DefinitionList returns a space's definitions of a kind ordered by name.
func (s *Store) DefinitionList(ctx context.Context, space, kind string) ([]store.Definition, error) {
	const q = "SELECT name, def, updated_at FROM definitions WHERE space = $1 AND kind = $2 ORDER BY name"
	rows, err := s.pool.Query(ctx, q, space, kind)
	if err != nil {
		return nil, wrap("list definitions", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Definition, error) { return scanDefinition(r) })
	if out == nil {
		out = []store.Definition{}
	}
	return out, wrap("list definitions", err)
}

// DefinitionDelete removes a definition; store.ErrNotFound if absent.
func (s *Store) DefinitionDelete(ctx context.Context, space, kind, name string) error {
	tag, err := s.pool.Exec(ctx, "DELETE FROM definitions WHERE space = $1 AND kind = $2 AND name = $3", space, kind, name)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("%s %s: %w", kind, name, pgx.ErrNoRows)
	}
	return wrap("delete definition", err)
}

// Secret returns the named secret, storing gen's value first if there is
// none; concurrent first calls from several processes agree on one value.
func (s *Store) Secret(ctx context.Context, name string, gen func() ([]byte, error)) ([]byte, error) {
	var value []byte
	err := s.pool.QueryRow(ctx, "SELECT value FROM secrets WHERE name = $1", name).Scan(&value)
	if !errors.Is(err, pgx.ErrNoRows) {
		return value, wrap("secret", err)
	}
	fresh, err := gen()
	if err != nil {
		return nil, fmt.Errorf("postgres: secret: %w", err)
	}
	const q = `INSERT INTO secrets (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET value = secrets.value RETURNING value`
	err = s.pool.QueryRow(ctx, q, name, fresh).Scan(&value)
	return value, wrap("secret", err)
}
