package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/firstchange"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
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
	var c rowcodec.RecordColumns
	err := row.Scan(&r.Type, &r.ID, &r.Version, &r.Kind, &c.Properties, &c.Links, &c.GroupVersions, &r.CreatedAt, &r.UpdatedAt)
	if err != nil {
		return r, err
	}
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return r, rowcodec.DecodeRecord(&r, c)
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

// FirstChangesAfter returns, for each key that has one, the first change
// with seq > after that touched it, in one query. (Only a commit naming a
// key without changing it, which eddy never writes, costs another query.)
func (s *Store) FirstChangesAfter(ctx context.Context, space string, after int64, keys []store.EntityKey) (map[store.EntityKey]store.Change, error) {
	out, err := firstchange.Find(keys, after, func(probes []firstchange.Probe) ([]firstchange.Hit, error) {
		return s.firstChanges(ctx, space, probes)
	})
	return out, wrap("first changes", err)
}

// firstChanges runs firstChangesQ once for probes.
func (s *Store) firstChanges(ctx context.Context, space string, probes []firstchange.Probe) ([]firstchange.Hit, error) {
	types, ids, afters := make([]string, len(probes)), make([]string, len(probes)), make([]int64, len(probes))
	for i, p := range probes {
		types[i], ids[i], afters[i] = p.Key.Type, p.Key.ID, p.After
	}
	rows, err := s.pool.Query(ctx, firstChangesQ, customPlan, space, types, ids, afters)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (firstchange.Hit, error) {
		var h firstchange.Hit
		err := r.Scan(&h.Probe, &h.Seq, &h.Changes)
		h.Probe-- // WITH ORDINALITY counts from 1
		return h, err
	})
}

const rowColumns = "seq, ts, actor, op, entity_id, entity_type, payload"

// Rows returns wire rows with p.Lo < seq <= p.Hi matching p.Filter, in seq
// order (descending with p.Desc), at most p.Limit. The page is read into
// an arena (rowcodec.Arena), a few allocations a page rather than six a
// row: a catch-up reads thousands of rows a second.
func (s *Store) Rows(ctx context.Context, p store.RowsParams) ([]store.Row, error) {
	q, args := rowsQuery(p)
	if p.Filter.EntityType != "" {
		args = append([]any{customPlan}, args...)
	}
	a, err := s.readArena(ctx, p.Limit, &s.rowBytes, (*rowcodec.Arena).RowDest, q, args...)
	switch {
	case err != nil:
		return nil, wrap("rows", err)
	case a == nil:
		return []store.Row{}, nil
	case !p.Recycle:
		return a.Rows(), nil
	}
	rows, m := a.RowsPage()
	s.lent.lend(start(rows), m)
	return rows, nil
}

// rowsQuery builds the SQL for Rows, in one of two shapes whose plans do
// not depend on statistics (tables read before ANALYZE, generic plans of
// cached statements):
//
//   - An entity-scoped read bounds seq only inside row comparisons led by
//     (entity_type, entity_id), which commits_entity_idx can use and
//     commits_pkey cannot, so it probes the entity's slice of the window.
//   - Any other read walks commits_pkey over the window in page order and
//     filters what it walks: the window query sits behind OFFSET 0, which
//     keeps the planner from pushing the filter into it, so it can neither
//     scan commits_entity_idx for a type across the whole space nor
//     bitmap-scan and sort the window when it misjudges the filter. The
//     window is at most changelog's MaxScan seqs wide, so the walk is
//     bounded however few rows match.
func rowsQuery(p store.RowsParams) (string, []any) {
	order := " ORDER BY seq"
	if p.Desc {
		order = " ORDER BY seq DESC"
	}
	args := []any{p.Space, p.Lo, p.Hi}
	conds := rowConds(p.Filter, &args)
	var sb strings.Builder
	if f := p.Filter; f.EntityType != "" {
		args = append(args, f.EntityType, f.EntityID)
		t, id := len(args)-1, len(args)
		fmt.Fprintf(&sb, "SELECT %s FROM commits WHERE space = $1 AND entity_type = $%d AND entity_id = $%d"+
			" AND (entity_type, entity_id, seq) > ($%[2]d, $%[3]d, $2)"+
			" AND (entity_type, entity_id, seq) <= ($%[2]d, $%[3]d, $3)", rowColumns, t, id)
		for _, c := range conds {
			sb.WriteString(" AND " + c)
		}
	} else {
		sb.WriteString("SELECT " + rowColumns + " FROM (SELECT " + rowColumns +
			" FROM commits WHERE space = $1 AND seq > $2 AND seq <= $3" + order + " OFFSET 0) w")
		if len(conds) > 0 {
			sb.WriteString(" WHERE " + strings.Join(conds, " AND "))
		}
	}
	args = append(args, limitArg(p.Limit))
	fmt.Fprintf(&sb, "%s LIMIT $%d", order, len(args))
	return sb.String(), args
}

// rowConds returns the list conditions f sets (not its entity), appending
// their arguments to args; a condition's placeholder is its argument's
// position.
func rowConds(f store.RowFilter, args *[]any) []string {
	var conds []string
	list := func(format string, v []string) {
		if len(v) > 0 {
			*args = append(*args, v)
			conds = append(conds, fmt.Sprintf(format, len(*args)))
		}
	}
	list("entity_type = ANY($%d)", f.Types)
	list("op = ANY($%d)", f.Ops)
	list("actor = ANY($%d)", f.Actors)
	list("entity_type <> ALL($%d)", f.ExcludeTypes)
	list("op <> ALL($%d)", f.ExcludeOps)
	list("actor <> ALL($%d)", f.ExcludeActors)
	return conds
}
