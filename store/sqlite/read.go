package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/firstchange"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// limitArg turns a non-positive limit into SQLite's "no limit".
func limitArg(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// EntityGet returns a record (live or tombstone) or ErrNotFound.
func (s *Store) EntityGet(ctx context.Context, space string, key store.EntityKey) (store.Record, error) {
	row, err := s.rqueryRow(ctx, `SELECT `+recordCols+` FROM entities
WHERE space = ? AND type = ? AND id = ?`, space, key.Type, key.ID)
	if err != nil {
		return store.Record{}, wrap("get entity", err)
	}
	r, err := scanRecord(row)
	return r, wrap("get entity", err)
}

// EntityList returns records of p.Type with id > p.After ordered by id
// (bytewise), at most p.Limit (none when <= 0): live records always,
// tombstones only when p.AsOf > 0 and their version is greater.
func (s *Store) EntityList(ctx context.Context, p store.EntityListParams) ([]store.Record, error) {
	rows, err := s.rquery(ctx, `SELECT `+recordCols+` FROM entities
WHERE space = ?1 AND type = ?2 AND id > ?3 AND (kind = 'live' OR (?4 > 0 AND version > ?4))
ORDER BY id LIMIT ?5`, p.Space, p.Type, p.After, p.AsOf, limitArg(p.Limit))
	if err != nil {
		return nil, wrap("list entities", err)
	}
	defer rows.Close()
	out := []store.Record{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, wrap("list entities", err)
		}
		out = append(out, r)
	}
	return out, wrap("list entities", rows.Err())
}

// entityNumOf is the SQL expression of the number of the entity (space,
// typ, id), the first column after the space of the entity history index
// commits_entity (migration 0019): NULL when the key has no row, as for
// the engine's own types, whose commits store NULL too.
func entityNumOf(space, typ, id string) string {
	return `(SELECT num FROM entities WHERE space = ` + space + ` AND type = ` + typ + ` AND id = ` + id + `)`
}

// sqlFirstChanges finds, per probe [type, id, after], the smallest
// seq > after of a commit naming the key as its primary entity (index
// commits_entity) or its second one (partial index commits_entity2), and
// returns that commit's changes with the probe's position.
var sqlFirstChanges = `WITH k AS (
    SELECT j.key AS i, j.value ->> 0 AS type, j.value ->> 1 AS id, j.value ->> 2 AS after
    FROM json_each(?2) AS j
), f AS MATERIALIZED (
    SELECT k.i,
        (SELECT x.seq FROM commits AS x
            WHERE x.space = ?1 AND x.entity_num IS ` + entityNumOf("?1", "k.type", "k.id") + `
              AND x.entity_type = k.type AND x.entity_id = k.id AND x.seq > k.after
            ORDER BY x.seq LIMIT 1) AS p,
        (SELECT y.seq FROM commits AS y
            WHERE y.space = ?1 AND y.entity2_type = k.type AND y.entity2_id = k.id
              AND y.entity2_id IS NOT NULL AND y.seq > k.after
            ORDER BY y.seq LIMIT 1) AS s
    FROM k
)
SELECT f.i, c.seq, c.changes
FROM f CROSS JOIN commits AS c
WHERE c.rid = ` + ridBaseOf("?1") + ` + min(coalesce(f.p, f.s), coalesce(f.s, f.p))`

// FirstChangesAfter returns, for each key that has one, the first change
// with seq > after that touched it, in one query. (Only a commit naming a
// key without changing it, which eddy never writes, costs another query.)
func (s *Store) FirstChangesAfter(ctx context.Context, space string, after int64, keys []store.EntityKey) (map[store.EntityKey]store.Change, error) {
	out, err := firstchange.Find(keys, after, func(probes []firstchange.Probe) ([]firstchange.Hit, error) {
		return s.firstChanges(ctx, space, probes)
	})
	return out, wrap("first changes", err)
}

// firstChanges runs one sqlFirstChanges query for probes.
func (s *Store) firstChanges(ctx context.Context, space string, probes []firstchange.Probe) ([]firstchange.Hit, error) {
	args := make([][3]any, len(probes))
	for i, p := range probes {
		args[i] = [3]any{p.Key.Type, p.Key.ID, p.After}
	}
	pj, err := rowcodec.Marshal(args)
	if err != nil {
		return nil, err
	}
	rows, err := s.rquery(ctx, sqlFirstChanges, space, pj)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var hits []firstchange.Hit
	for rows.Next() {
		var h firstchange.Hit
		if err := rows.Scan(&h.Probe, &h.Seq, &h.Changes); err != nil {
			return nil, err
		}
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// rowsQuery builds the Rows statement. Its shape depends only on which
// filters are set (values travel as JSON arrays through json_each), so the
// statement cache holds few shapes. Type filters use +entity_type so that
// only an entity filter reaches for the commits_entity index; every other
// read walks the space's range of rids.
func rowsQuery(p *store.RowsParams) (string, []any, error) {
	var b strings.Builder
	args := []any{p.Space, p.Lo, p.Hi}
	b.WriteString(`SELECT seq, ts, actor, op, entity_id, entity_type, payload FROM commits`)
	f := &p.Filter
	order := "rid"
	if f.EntityType != "" {
		b.WriteString(` INDEXED BY commits_entity WHERE space = ?1 AND seq > ?2 AND seq <= ?3`)
		b.WriteString(` AND entity_num IS ` + entityNumOf("?1", "?4", "?5") + ` AND entity_type = ?4 AND entity_id = ?5`)
		args = append(args, f.EntityType, f.EntityID)
		order = "seq"
	} else {
		b.WriteString(` WHERE ` + ridRange("rid", ridBaseOf("?1"), "?2", "?3"))
	}
	lists := []struct {
		col  string
		not  bool
		vals []string
	}{
		{"+entity_type", false, f.Types}, {"op", false, f.Ops}, {"actor", false, f.Actors},
		{"+entity_type", true, f.ExcludeTypes}, {"op", true, f.ExcludeOps}, {"actor", true, f.ExcludeActors},
	}
	for _, l := range lists {
		if len(l.vals) == 0 {
			continue
		}
		js, err := rowcodec.Marshal(l.vals)
		if err != nil {
			return "", nil, err
		}
		in := " IN"
		if l.not {
			in = " NOT IN"
		}
		b.WriteString(` AND ` + l.col + in + ` (SELECT value FROM json_each(?))`)
		args = append(args, js)
	}
	b.WriteString(` ORDER BY ` + order)
	if p.Desc {
		b.WriteString(` DESC`)
	}
	b.WriteString(` LIMIT ?`)
	return b.String(), append(args, limitArg(p.Limit)), nil
}

// Rows returns wire rows with p.Lo < seq <= p.Hi matching p.Filter, in seq
// order (descending when p.Desc), at most p.Limit (none when <= 0).
func (s *Store) Rows(ctx context.Context, p store.RowsParams) ([]store.Row, error) {
	q, args, err := rowsQuery(&p)
	if err != nil {
		return nil, wrap("rows: encode", err)
	}
	rows, err := s.rquery(ctx, q, args...)
	if err != nil {
		return nil, wrap("rows", err)
	}
	defer rows.Close()
	out := []store.Row{}
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return nil, wrap("rows", err)
		}
		out = append(out, r)
	}
	return out, wrap("rows", rows.Err())
}

func scanRow(sc scanner, extra ...any) (store.Row, error) {
	var (
		r       store.Row
		ts      int64
		payload string
	)
	dest := append([]any{&r.Seq, &ts, &r.Actor, &r.Op, &r.EntityID, &r.Type, &payload}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return r, err
	}
	r.TS, r.Payload = fromMicros(ts), json.RawMessage(payload)
	return r, nil
}

// Commits returns at most p.Limit (none when <= 0) whole commits with
// seq > p.After, ascending, each with its changes, receipt and provenance.
// One statement reads them all, so the page is one snapshot: a concurrent
// prune cannot split it.
func (s *Store) Commits(ctx context.Context, p store.CommitsParams) ([]store.Commit, error) {
	query := sqlCommits
	if p.NoReceipts {
		query = sqlCommitsNoReceipts
	}
	return s.commits(ctx, "commits", query, p.Space, p.After, limitArg(p.Limit))
}

// commits runs a read of whole commits (the columns of sqlCommits) and
// decodes them; op names it in errors.
func (s *Store) commits(ctx context.Context, op, query string, args ...any) ([]store.Commit, error) {
	raws, err := s.rawCommits(ctx, op, query, args...)
	if err != nil {
		return nil, err
	}
	commits, err := rowcodec.DecodeAll(raws)
	return commits, wrap(op, err)
}

// RawCommits is Commits with the JSON columns left as stored, each with
// its stored change count; with p.ChangesOf, rows of other types come
// without provenance and changes unless they have no stored count.
func (s *Store) RawCommits(ctx context.Context, p store.CommitsParams) ([]store.RawCommit, error) {
	receipt, only := "receipt", any(nil)
	if p.NoReceipts {
		receipt = "''"
	}
	if p.ChangesOf != nil {
		types, err := json.Marshal(p.ChangesOf)
		if err != nil {
			return nil, wrap("raw commits", err)
		}
		only = string(types)
	}
	query := `SELECT seq, ts, actor, op, entity_id, entity_type, payload, ` + receipt + `,
	CASE WHEN ` + sqlReadChanges + ` THEN provenance END, CASE WHEN ` + sqlReadChanges + ` THEN changes END, change_count
FROM commits WHERE ` + sqlSeqsAfter + ` ORDER BY rid LIMIT ?3`
	rows, err := s.rquery(ctx, query, p.Space, p.After, limitArg(p.Limit), only)
	if err != nil {
		return nil, wrap("raw commits", err)
	}
	defer rows.Close()
	out := []store.RawCommit{}
	for rows.Next() {
		var (
			raw   store.RawCommit
			count sql.NullInt64
		)
		// NULL provenance and changes (unread) scan as nil.
		raw.Row, err = scanRow(rows, (*[]byte)(&raw.Receipt), (*[]byte)(&raw.Provenance), (*[]byte)(&raw.Changes), &count)
		if err != nil {
			return nil, wrap("raw commits", err)
		}
		if count.Valid {
			raw.SetChangeCount(int(count.Int64))
		}
		out = append(out, raw)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("raw commits", err)
	}
	return out, nil
}

// sqlReadChanges decides whether RawCommits reads a row's provenance and
// changes: always without ChangesOf (?4 is NULL), else when the row is of
// one of its types (?4, a JSON array) or has no stored count.
const sqlReadChanges = `(?4 IS NULL OR change_count IS NULL OR entity_type IN (SELECT value FROM json_each(?4)))`

// rawCommits runs a read of whole commits (the columns of sqlCommits),
// leaving their JSON columns encoded.
func (s *Store) rawCommits(ctx context.Context, op, query string, args ...any) ([]rowcodec.RawCommit, error) {
	rows, err := s.rquery(ctx, query, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	defer rows.Close()
	var raws []rowcodec.RawCommit
	for rows.Next() {
		var raw rowcodec.RawCommit
		raw.Row, err = scanRow(rows, &raw.Receipt, &raw.Provenance, &raw.Changes)
		if err != nil {
			return nil, wrap(op, err)
		}
		raws = append(raws, raw)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(op, err)
	}
	return raws, nil
}

// sqlSeqsAfter is the condition that a commits row is in the space ?1
// with seq > ?2.
var sqlSeqsAfter = ridRange("rid", ridBaseOf("?1"), "?2", sqlLastSeq)

// The reads of whole commits with seq > ?2 in the space ?1, at most ?3.
var (
	sqlCommits = `SELECT seq, ts, actor, op, entity_id, entity_type, payload, receipt, provenance, changes
FROM commits WHERE ` + sqlSeqsAfter + ` ORDER BY rid LIMIT ?3`
	sqlCommitsNoReceipts = `SELECT seq, ts, actor, op, entity_id, entity_type, payload, '', provenance, changes
FROM commits WHERE ` + sqlSeqsAfter + ` ORDER BY rid LIMIT ?3`
)
