package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// DefinitionPut creates or replaces a definition and reports whether it
// created it.
func (s *Store) DefinitionPut(ctx context.Context, space, kind string, d store.Definition) (bool, error) {
	d.UpdatedAt = utcMicro(d.UpdatedAt)
	if d.UpdatedAt.IsZero() {
		d.UpdatedAt = now()
	}
	created := false
	err := s.writeTx(ctx, func(tx *connTx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM definitions WHERE space = ? AND kind = ? AND name = ?`, space, kind, d.Name).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			created = true
		} else if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO definitions (space, kind, name, def, updated_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (space, kind, name) DO UPDATE SET def = excluded.def, updated_at = excluded.updated_at`,
			space, kind, d.Name, rowcodec.RawText(d.Def, "{}"), micros(d.UpdatedAt))
		return err
	})
	return created, wrap("put definition", err)
}

func scanDefinition(sc scanner) (store.Definition, error) {
	var d store.Definition
	var def string
	var upd int64
	err := sc.Scan(&d.Name, &def, &upd)
	d.Def, d.UpdatedAt = json.RawMessage(def), fromMicros(upd)
	return d, err
}

// DefinitionGet returns a definition or store.ErrNotFound.
func (s *Store) DefinitionGet(ctx context.Context, space, kind, name string) (store.Definition, error) {
	row, err := s.rqueryRow(ctx, `SELECT name, def, updated_at FROM definitions WHERE space = ? AND kind = ? AND name = ?`, space, kind, name)
	if err != nil {
		return store.Definition{}, wrap("get definition", err)
	}
	d, err := scanDefinition(row)
	return d, wrap("get definition", err)
}

// DefinitionList returns a space's definitions of a kind ordered by name.
func (s *Store) DefinitionList(ctx context.Context, space, kind string) ([]store.Definition, error) {
	rows, err := s.rquery(ctx, `SELECT name, def, updated_at FROM definitions WHERE space = ? AND kind = ? ORDER BY name`, space, kind)
	if err != nil {
		return nil, wrap("list definitions", err)
	}
	defer rows.Close()
	out := []store.Definition{}
	for rows.Next() {
		d, err := scanDefinition(rows)
		if err != nil {
			return nil, wrap("list definitions", err)
		}
		out = append(out, d)
	}
	return out, wrap("list definitions", rows.Err())
}

// DefinitionDelete removes a definition; store.ErrNotFound if absent.
func (s *Store) DefinitionDelete(ctx context.Context, space, kind, name string) error {
	err := s.writeTx(ctx, func(tx *connTx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM definitions WHERE space = ? AND kind = ? AND name = ?`, space, kind, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return orNoRows(err)
		}
		return nil
	})
	return wrap("delete definition", err)
}

// Secret returns the named secret, storing gen's value first if there is
// none.
func (s *Store) Secret(ctx context.Context, name string, gen func() ([]byte, error)) ([]byte, error) {
	var value []byte
	err := s.writeTx(ctx, func(tx *connTx) error {
		err := tx.QueryRowContext(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&value)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if value, err = gen(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO secrets (name, value) VALUES (?, ?)`, name, value)
		return err
	})
	return value, wrap("secret", err)
}
