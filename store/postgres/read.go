package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

// customPlan, passed as a query's first argument, runs it as an unnamed
// statement, which PostgreSQL plans for the actual arguments every time.
// Queries whose best index depends on them (entity-scoped history, first
// changes) use it: a cached generic plan made while a table was small may
// scan the whole space instead of probing the entity index.
const customPlan = pgx.QueryExecModeCacheDescribe

const entityColumns = "type, id, version, kind, properties, links, group_versions, created_at, updated_at"

// scanRecord reads one entities row selected with entityColumns.
func scanRecord(row pgx.Row) (store.Record, error) {
	var r store.Record
	var c recordColumns
	err := row.Scan(&r.Type, &r.ID, &r.Version, &r.Kind, &c.properties, &c.links, &c.groupVersions, &r.CreatedAt, &r.UpdatedAt)
	if err != nil {
		return r, err
	}
	return r, decodeRecord(&r, c)
}

// EntityGet returns a record (live or tombstone) or store.ErrNotFound.
func (s *Store) EntityGet(ctx context.Context, space string, key store.EntityKey) (store.Record, error) {
	const q = "SELECT " + entityColumns + " FROM entities WHERE space = $1 AND type = $2 AND id = $3"
	r, err := scanRecord(s.pool.QueryRow(ctx, q, space, key.Type, key.ID))
	return r, wrap("get entity", err)
}

// EntityList returns live records of one type with id > p.After ordered by
// id (bytewise), and with p.AsOf > 0 also tombstones newer than p.AsOf.
func (s *Store) EntityList(ctx context.Context, p store.EntityListParams) ([]store.Record, error) {
	const q = "SELECT " + entityColumns + ` FROM entities
		WHERE space = $1 AND type = $2 AND id > $3
		  AND (kind = 'live' OR ($4::bigint > 0 AND version > $4::bigint))
		ORDER BY id LIMIT $5`
	rows, err := s.pool.Query(ctx, q, p.Space, p.Type, p.After, p.AsOf, limitArg(p.Limit))
	if err != nil {
		return nil, wrap("list entities", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Record, error) { return scanRecord(r) })
	if out == nil {
		out = []store.Record{}
	}
	return out, wrap("list entities", err)
}

const changeColumns = "seq, ordinal, kind, type, id, version, before, after, conflict_groups"

// scanChange reads one changes row selected with changeColumns and
// returns its seq and the decoded change.
func scanChange(row pgx.Row) (int64, store.Change, error) {
	var seq int64
	var c store.Change
	var before, after *string
	var groups string
	err := row.Scan(&seq, &c.Ordinal, &c.Kind, &c.Type, &c.ID, &c.Version, &before, &after, &groups)
	if err != nil {
		return 0, c, err
	}
	if c.Before, err = decodeSnapshot(before); err != nil {
		return 0, c, err
	}
	if c.After, err = decodeSnapshot(after); err != nil {
		return 0, c, err
	}
	c.ConflictGroups, err = decodeStrings(groups)
	return seq, c, err
}

// FirstChangesAfter returns, for each key that has one, the first change
// with seq > after that touched it, in one query.
func (s *Store) FirstChangesAfter(ctx context.Context, space string, after int64, keys []store.EntityKey) (map[store.EntityKey]store.Change, error) {
	out := make(map[store.EntityKey]store.Change, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	const q = "SELECT " + changeColumns + ` FROM unnest($3::text[], $4::text[]) AS k(ktype, kid)
		CROSS JOIN LATERAL (
			SELECT ` + changeColumns + ` FROM changes ch
			WHERE ch.space = $1 AND ch.type = k.ktype AND ch.id = k.kid AND ch.seq > $2
			ORDER BY ch.seq, ch.ordinal LIMIT 1) c`
	types, ids := splitKeys(keys)
	rows, err := s.pool.Query(ctx, q, customPlan, space, after, types, ids)
	if err != nil {
		return nil, wrap("first changes", err)
	}
	changes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Change, error) {
		_, c, err := scanChange(r)
		return c, err
	})
	if err != nil {
		return nil, wrap("first changes", err)
	}
	for _, c := range changes {
		out[store.EntityKey{Type: c.Type, ID: c.ID}] = c
	}
	return out, nil
}

// splitKeys returns the keys' types and ids as parallel arrays.
func splitKeys(keys []store.EntityKey) (types, ids []string) {
	types = make([]string, len(keys))
	ids = make([]string, len(keys))
	for i, k := range keys {
		types[i], ids[i] = k.Type, k.ID
	}
	return types, ids
}

const rowColumns = "seq, ts, actor, op, entity_id, entity_type, payload"

// scanRow reads one commits row selected with rowColumns.
func scanRow(row pgx.Row) (store.Row, error) {
	var r store.Row
	var payload string
	err := row.Scan(&r.Seq, &r.TS, &r.Actor, &r.Op, &r.EntityID, &r.Type, &payload)
	r.TS = r.TS.UTC()
	r.Payload = json.RawMessage(payload)
	return r, err
}

// Rows returns wire rows with p.Lo < seq <= p.Hi matching p.Filter, in seq
// order (descending with p.Desc), at most p.Limit.
func (s *Store) Rows(ctx context.Context, p store.RowsParams) ([]store.Row, error) {
	q, args := rowsQuery(p)
	if p.Filter.EntityType != "" {
		args = append([]any{customPlan}, args...)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, wrap("rows", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Row, error) { return scanRow(r) })
	if out == nil {
		out = []store.Row{}
	}
	return out, wrap("rows", err)
}

// rowsQuery builds the SQL for Rows: only the conditions the filter sets
// appear, so each shape gets its own plan (entity-scoped reads use the
// (space, entity_type, entity_id, seq) index).
func rowsQuery(p store.RowsParams) (string, []any) {
	var sb strings.Builder
	args := []any{p.Space, p.Lo, p.Hi}
	sb.WriteString("SELECT " + rowColumns + " FROM commits WHERE space = $1 AND seq > $2 AND seq <= $3")
	cond := func(format string, v any) {
		args = append(args, v)
		fmt.Fprintf(&sb, format, len(args))
	}
	list := func(format string, v []string) {
		if len(v) > 0 {
			cond(format, v)
		}
	}
	f := p.Filter
	list(" AND entity_type = ANY($%d)", f.Types)
	list(" AND op = ANY($%d)", f.Ops)
	list(" AND actor = ANY($%d)", f.Actors)
	list(" AND entity_type <> ALL($%d)", f.ExcludeTypes)
	list(" AND op <> ALL($%d)", f.ExcludeOps)
	list(" AND actor <> ALL($%d)", f.ExcludeActors)
	if f.EntityType != "" {
		cond(" AND entity_type = $%d", f.EntityType)
		cond(" AND entity_id = $%d", f.EntityID)
	}
	if p.Desc {
		sb.WriteString(" ORDER BY seq DESC")
	} else {
		sb.WriteString(" ORDER BY seq")
	}
	cond(" LIMIT $%d", limitArg(p.Limit))
	return sb.String(), args
}
