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

// firstChangesQ finds, per probe (type, id, after), the smallest
// seq > after of a commit naming the key as its primary entity
// (commits_entity_idx) or its second one (the partial
// commits_entity2_idx), and returns that commit's changes with the
// probe's 1-based position.
const firstChangesQ = `SELECT k.i, c.seq, c.changes
	FROM unnest($2::text[], $3::text[], $4::bigint[]) WITH ORDINALITY AS k(ktype, kid, kafter, i)
	CROSS JOIN LATERAL (SELECT least(
		(SELECT x.seq FROM commits x
			WHERE x.space = $1 AND x.entity_type = k.ktype AND x.entity_id = k.kid AND x.seq > k.kafter
			ORDER BY x.seq LIMIT 1),
		(SELECT y.seq FROM commits y
			WHERE y.space = $1 AND y.entity2_type = k.ktype AND y.entity2_id = k.kid
			  AND y.entity2_id IS NOT NULL AND y.seq > k.kafter
			ORDER BY y.seq LIMIT 1)) AS seq) f
	JOIN commits c ON c.space = $1 AND c.seq = f.seq`

// probe asks for the first change of key with seq > after.
type probe struct {
	key   store.EntityKey
	after int64
}

// FirstChangesAfter returns, for each key that has one, the first change
// with seq > after that touched it, in one query. (Only a commit naming a
// key without changing it, which eddy never writes, costs another query.)
func (s *Store) FirstChangesAfter(ctx context.Context, space string, after int64, keys []store.EntityKey) (map[store.EntityKey]store.Change, error) {
	out := make(map[store.EntityKey]store.Change, len(keys))
	probes := make([]probe, 0, len(keys))
	seen := make(map[store.EntityKey]bool, len(keys))
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			probes = append(probes, probe{key: k, after: after})
		}
	}
	for len(probes) > 0 {
		var err error
		if probes, err = s.firstChanges(ctx, space, probes, out); err != nil {
			return nil, wrap("first changes", err)
		}
	}
	return out, nil
}

// firstChanges runs firstChangesQ once and adds the changes found to out.
// It returns the probes to run again: keys whose first commit named them
// but held no change of them.
func (s *Store) firstChanges(ctx context.Context, space string, probes []probe, out map[store.EntityKey]store.Change) ([]probe, error) {
	types, ids, afters := make([]string, len(probes)), make([]string, len(probes)), make([]int64, len(probes))
	for i, p := range probes {
		types[i], ids[i], afters[i] = p.key.Type, p.key.ID, p.after
	}
	rows, err := s.pool.Query(ctx, firstChangesQ, customPlan, space, types, ids, afters)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var again []probe
	for rows.Next() {
		var i, seq int64
		var text string
		if err := rows.Scan(&i, &seq, &text); err != nil {
			return nil, err
		}
		if i < 1 || i > int64(len(probes)) {
			return nil, fmt.Errorf("probe position %d out of range", i)
		}
		k := probes[i-1].key
		ch, ok, err := changeOf(text, k)
		switch {
		case err != nil:
			return nil, fmt.Errorf("seq %d: %w", seq, err)
		case ok:
			out[k] = ch
		default:
			again = append(again, probe{key: k, after: seq})
		}
	}
	return again, rows.Err()
}

// changeOf decodes a changes column and returns the first change of key.
func changeOf(text string, key store.EntityKey) (store.Change, bool, error) {
	cs, err := decodeChanges(text)
	if err != nil {
		return store.Change{}, false, err
	}
	for _, ch := range cs {
		if ch.Type == key.Type && ch.ID == key.ID {
			return ch, true, nil
		}
	}
	return store.Change{}, false, nil
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
