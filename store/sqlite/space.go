package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// spaceHead is the head of the space row named spaces: the greater of
// its stored head and the seq of its last commit, read at the end of its
// range of rids. A commit does not store the head (an update of the
// spaces row would add its page to every commit's WAL frames, one in
// seven of a single put's): spaces.head is the head at the space's
// creation or its last prune, which stores it before deleting commits,
// so the head never moves back.
var spaceHead = `max(spaces.head,
    coalesce((SELECT c.seq FROM commits AS c WHERE ` + ridRange("c.rid", ridBase("spaces.num"), "0", sqlLastSeq) + `
        ORDER BY c.rid DESC LIMIT 1), 0))`

// spaceCols are the columns scanSpace reads, from a row named spaces.
var spaceCols = `id, ` + spaceHead + `, horizon, epoch, schema_version, created_at`

// scanSpace scans the columns of spaceCols, then into extra any that
// follow them.
func scanSpace(sc scanner, extra ...any) (store.Space, error) {
	var sp store.Space
	var created int64
	err := sc.Scan(append([]any{&sp.ID, &sp.Head, &sp.Horizon, &sp.Epoch, &sp.SchemaVersion, &created}, extra...)...)
	sp.CreatedAt = fromMicros(created)
	return sp, err
}

// SpaceCreate creates a space at head 0, horizon 0; ErrExists if it exists.
func (s *Store) SpaceCreate(ctx context.Context, id, epoch string) (store.Space, error) {
	sp := store.Space{ID: id, Epoch: epoch, CreatedAt: now()}
	res, err := s.wr.exec(ctx, `INSERT INTO spaces (id, head, horizon, epoch, schema_version, created_at, num)
VALUES (?, 0, 0, ?, 0, ?, (SELECT coalesce(max(num), 0) + 1 FROM spaces)) ON CONFLICT DO NOTHING`, id, epoch, micros(sp.CreatedAt))
	if err != nil {
		return sp, wrap("create space", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return sp, fmt.Errorf("sqlite: create space %q: %w", id, orExists(err))
	}
	return sp, nil
}

// orExists is err, or ErrExists when an insert met a row without error.
func orExists(err error) error {
	if err != nil {
		return err
	}
	return store.ErrExists
}

// SpaceGet returns a space or ErrNotFound.
func (s *Store) SpaceGet(ctx context.Context, id string) (store.Space, error) {
	row, err := s.rqueryRow(ctx, `SELECT `+spaceCols+` FROM spaces WHERE id = ?`, id)
	if err != nil {
		return store.Space{}, wrap("get space", err)
	}
	sp, err := scanSpace(row)
	return sp, wrap("get space", err)
}

// SpaceList returns every space ordered by id.
func (s *Store) SpaceList(ctx context.Context) ([]store.Space, error) {
	rows, err := s.rquery(ctx, `SELECT `+spaceCols+` FROM spaces ORDER BY id`)
	if err != nil {
		return nil, wrap("list spaces", err)
	}
	defer rows.Close()
	out := []store.Space{}
	for rows.Next() {
		sp, err := scanSpace(rows)
		if err != nil {
			return nil, wrap("list spaces", err)
		}
		out = append(out, sp)
	}
	return out, wrap("list spaces", rows.Err())
}

// SpacePrune deletes commits (their changes with them), deliveries and
// stance errors with seq <= through, and the root counters whose chains
// ended at or below it, and moves the horizon to max(horizon, through),
// in one write transaction. The head never moves: it is stored in the
// spaces row before the commits that give it are deleted.
func (s *Store) SpacePrune(ctx context.Context, id string, through int64) (store.Space, error) {
	var sp store.Space
	err := s.writeTx(ctx, func(tx *connTx) error {
		var err error
		sp, err = scanSpace(tx.QueryRowContext(ctx, `UPDATE spaces SET horizon = max(horizon, ?), head = `+spaceHead+`
WHERE id = ? RETURNING `+spaceCols, through, id))
		if err != nil {
			return err
		}
		for _, q := range pruneQueries {
			if _, err := tx.ExecContext(ctx, q, id, through); err != nil {
				return err
			}
		}
		return nil
	})
	return sp, wrap("prune space", err)
}

// pruneQueries delete a space's rows with seq <= through.
var pruneQueries = []string{
	`DELETE FROM commits WHERE ` + ridRange("rid", ridBaseOf("?1"), "0", "?2"),
	sqlPruneDeliveries,
	sqlPruneErrors,
	sqlPruneRootCounts,
}

// bumpSchema increments a space's schema version; ErrNotFound if the space
// is missing.
func bumpSchema(ctx context.Context, tx *connTx, space string) error {
	var v int64
	return tx.QueryRowContext(ctx, `UPDATE spaces SET schema_version = schema_version + 1
WHERE id = ? RETURNING schema_version`, space).Scan(&v)
}

// TypeDefPut stores a type definition and bumps the space's schema version.
// A zero UpdatedAt is set to now.
func (s *Store) TypeDefPut(ctx context.Context, space string, def store.TypeDef) (store.TypeDef, error) {
	def.UpdatedAt = utcMicro(def.UpdatedAt)
	if def.UpdatedAt.IsZero() {
		def.UpdatedAt = now()
	}
	err := s.writeTx(ctx, func(tx *connTx) error {
		if err := bumpSchema(ctx, tx, space); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO type_defs (space, type, def, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (space, type) DO UPDATE SET def = excluded.def, updated_at = excluded.updated_at`,
			space, def.Type, rowcodec.RawText(def.Def, "{}"), micros(def.UpdatedAt))
		return err
	})
	if err != nil {
		return store.TypeDef{}, wrap("put type", err)
	}
	def.Def = json.RawMessage(rowcodec.RawText(def.Def, "{}"))
	return def, nil
}

const typeDefCols = `type, def, updated_at`

func scanTypeDef(sc scanner) (store.TypeDef, error) {
	var td store.TypeDef
	var def string
	var upd int64
	err := sc.Scan(&td.Type, &def, &upd)
	td.Def, td.UpdatedAt = json.RawMessage(def), fromMicros(upd)
	return td, err
}

// TypeDefGet returns a type definition or ErrNotFound.
func (s *Store) TypeDefGet(ctx context.Context, space, typ string) (store.TypeDef, error) {
	row, err := s.rqueryRow(ctx, `SELECT `+typeDefCols+` FROM type_defs WHERE space = ? AND type = ?`, space, typ)
	if err != nil {
		return store.TypeDef{}, wrap("get type", err)
	}
	td, err := scanTypeDef(row)
	return td, wrap("get type", err)
}

// TypeDefList returns a space's type definitions ordered by type.
func (s *Store) TypeDefList(ctx context.Context, space string) ([]store.TypeDef, error) {
	rows, err := s.rquery(ctx, `SELECT `+typeDefCols+` FROM type_defs WHERE space = ? ORDER BY type`, space)
	if err != nil {
		return nil, wrap("list types", err)
	}
	defer rows.Close()
	out := []store.TypeDef{}
	for rows.Next() {
		td, err := scanTypeDef(rows)
		if err != nil {
			return nil, wrap("list types", err)
		}
		out = append(out, td)
	}
	return out, wrap("list types", rows.Err())
}

// TypeDefDelete removes a type definition (ErrNotFound if absent) and bumps
// the schema version.
func (s *Store) TypeDefDelete(ctx context.Context, space, typ string) error {
	err := s.writeTx(ctx, func(tx *connTx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM type_defs WHERE space = ? AND type = ?`, space, typ)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return orNoRows(err)
		}
		return bumpSchema(ctx, tx, space)
	})
	return wrap("delete type", err)
}

// orNoRows is err, or sql.ErrNoRows when a statement touched nothing.
func orNoRows(err error) error {
	if err != nil {
		return err
	}
	return sql.ErrNoRows
}
