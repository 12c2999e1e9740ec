package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

const spaceColumns = "id, head, horizon, epoch, schema_version, created_at"

// scanSpace reads one spaces row selected with spaceColumns.
func scanSpace(row pgx.Row) (store.Space, error) {
	var sp store.Space
	err := row.Scan(&sp.ID, &sp.Head, &sp.Horizon, &sp.Epoch, &sp.SchemaVersion, &sp.CreatedAt)
	sp.CreatedAt = sp.CreatedAt.UTC()
	return sp, err
}

// SpaceCreate creates a space at head 0, horizon 0; store.ErrExists if it
// exists.
func (s *Store) SpaceCreate(ctx context.Context, id, epoch string) (store.Space, error) {
	const q = `INSERT INTO spaces (id, epoch, created_at) VALUES ($1, $2, $3)
		RETURNING ` + spaceColumns
	sp, err := scanSpace(s.pool.QueryRow(ctx, q, id, epoch, s.nowMicro()))
	return sp, wrap("create space", err)
}

// SpaceGet returns a space or store.ErrNotFound.
func (s *Store) SpaceGet(ctx context.Context, id string) (store.Space, error) {
	const q = "SELECT " + spaceColumns + " FROM spaces WHERE id = $1"
	sp, err := scanSpace(s.pool.QueryRow(ctx, q, id))
	return sp, wrap("get space", err)
}

// SpaceList returns every space ordered by id.
func (s *Store) SpaceList(ctx context.Context) ([]store.Space, error) {
	const q = "SELECT " + spaceColumns + " FROM spaces ORDER BY id"
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		return nil, wrap("list spaces", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Space, error) { return scanSpace(r) })
	if out == nil {
		out = []store.Space{}
	}
	return out, wrap("list spaces", err)
}

// SpacePrune deletes commits (their changes with them), deliveries and
// stance errors with seq <= through, and the root counters whose chains
// ended at or below it, and moves the horizon to
// max(horizon, through), holding the space write lock. The head never
// moves.
func (s *Store) SpacePrune(ctx context.Context, id string, through int64) (store.Space, error) {
	var sp store.Space
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		const lock = "SELECT id FROM spaces WHERE id = $1 FOR UPDATE"
		if err := tx.QueryRow(ctx, lock, id).Scan(new(string)); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		b := &pgx.Batch{}
		b.Queue("DELETE FROM commits WHERE space = $1 AND seq <= $2", id, through)
		b.Queue("DELETE FROM deliveries WHERE space = $1 AND seq <= $2", id, through)
		b.Queue("DELETE FROM stance_errors WHERE space = $1 AND seq <= $2", id, through)
		b.Queue(rootCountsPruneQ, id, through)
		b.Queue(`UPDATE spaces SET horizon = GREATEST(horizon, $2) WHERE id = $1
			RETURNING `+spaceColumns, id, through).QueryRow(func(r pgx.Row) error {
			var err error
			sp, err = scanSpace(r)
			return err
		})
		return tx.SendBatch(ctx, b).Close()
	})
	return sp, wrap("prune space", err)
}

const typeDefColumns = "type, def, updated_at"

// scanTypeDef reads one type_defs row selected with typeDefColumns.
func scanTypeDef(row pgx.Row) (store.TypeDef, error) {
	var td store.TypeDef
	var def string
	err := row.Scan(&td.Type, &def, &td.UpdatedAt)
	td.Def = json.RawMessage(def)
	td.UpdatedAt = td.UpdatedAt.UTC()
	return td, err
}

// bumpSchema locks the space row and increments its schema version.
func bumpSchema(ctx context.Context, tx pgx.Tx, space string) error {
	const q = `UPDATE spaces SET schema_version = schema_version + 1
		WHERE id = $1 RETURNING id`
	if err := tx.QueryRow(ctx, q, space).Scan(new(string)); err != nil {
		return fmt.Errorf("bump schema version: %w", err)
	}
	return nil
}

// TypeDefPut stores a type definition (UpdatedAt defaults to now) and bumps
// the space's schema version; store.ErrNotFound if the space is missing.
func (s *Store) TypeDefPut(ctx context.Context, space string, def store.TypeDef) (store.TypeDef, error) {
	def.UpdatedAt = s.orNow(def.UpdatedAt)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := bumpSchema(ctx, tx, space); err != nil {
			return err
		}
		const q = `INSERT INTO type_defs (space, type, def, updated_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (space, type) DO UPDATE SET def = EXCLUDED.def, updated_at = EXCLUDED.updated_at`
		_, err := tx.Exec(ctx, q, space, def.Type, string(def.Def), def.UpdatedAt)
		return err
	})
	if err != nil {
		return store.TypeDef{}, wrap("put type", err)
	}
	return def, nil
}

// TypeDefGet returns a type definition or store.ErrNotFound.
func (s *Store) TypeDefGet(ctx context.Context, space, typ string) (store.TypeDef, error) {
	const q = "SELECT " + typeDefColumns + " FROM type_defs WHERE space = $1 AND type = $2"
	td, err := scanTypeDef(s.pool.QueryRow(ctx, q, space, typ))
	return td, wrap("get type", err)
}

// TypeDefList returns a space's type definitions ordered by type.
func (s *Store) TypeDefList(ctx context.Context, space string) ([]store.TypeDef, error) {
	const q = "SELECT " + typeDefColumns + " FROM type_defs WHERE space = $1 ORDER BY type"
	rows, err := s.pool.Query(ctx, q, space)
	if err != nil {
		return nil, wrap("list types", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.TypeDef, error) { return scanTypeDef(r) })
	if out == nil {
		out = []store.TypeDef{}
	}
	return out, wrap("list types", err)
}

// TypeDefDelete removes a type definition (store.ErrNotFound if absent) and
// bumps the schema version.
func (s *Store) TypeDefDelete(ctx context.Context, space, typ string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := bumpSchema(ctx, tx, space); err != nil {
			return err
		}
		const q = "DELETE FROM type_defs WHERE space = $1 AND type = $2"
		tag, err := tx.Exec(ctx, q, space, typ)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("type %s: %w", typ, pgx.ErrNoRows)
		}
		return nil
	})
	return wrap("delete type", err)
}
