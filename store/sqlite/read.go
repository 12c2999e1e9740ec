package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/eddy-run/eddy/store"
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

const changeCols = `c.seq, c.ordinal, c.kind, c.type, c.id, c.version, c."before", c."after", c.conflict_groups`

// scanChange reads one row of changeCols.
func scanChange(sc scanner) (int64, store.Change, error) {
	var (
		seq           int64
		ch            store.Change
		before, after sql.NullString
		groups        string
	)
	err := sc.Scan(&seq, &ch.Ordinal, &ch.Kind, &ch.Type, &ch.ID, &ch.Version, &before, &after, &groups)
	if err != nil {
		return 0, ch, err
	}
	if ch.Before, err = unsnapshot(before); err != nil {
		return 0, ch, err
	}
	if ch.After, err = unsnapshot(after); err != nil {
		return 0, ch, err
	}
	ch.ConflictGroups, err = decodeStrings(groups)
	return seq, ch, err
}

// sqlFirstChanges finds, per key, the smallest seq > after that touched it
// (through the changes (space, type, id, seq) index), then reads that
// commit's changes of the key in ordinal order.
const sqlFirstChanges = `WITH k AS (
    SELECT j.value ->> 0 AS type, j.value ->> 1 AS id FROM json_each(?3) AS j
), f AS MATERIALIZED (
    SELECT k.type, k.id, (SELECT x.seq FROM changes AS x
        WHERE x.space = ?1 AND x.type = k.type AND x.id = k.id AND x.seq > ?2
        ORDER BY x.seq LIMIT 1) AS seq
    FROM k
)
SELECT ` + changeCols + `
FROM f CROSS JOIN changes AS c
WHERE f.seq IS NOT NULL AND c.space = ?1 AND c.seq = f.seq AND c.type = f.type AND c.id = f.id
ORDER BY c.seq, c.ordinal`

// FirstChangesAfter returns, for each key that has one, the first change
// with seq > after that touched it, in one query.
func (s *Store) FirstChangesAfter(ctx context.Context, space string, after int64, keys []store.EntityKey) (map[store.EntityKey]store.Change, error) {
	out := make(map[store.EntityKey]store.Change, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	kj, err := keysJSON(keys)
	if err != nil {
		return nil, wrap("first changes: encode", err)
	}
	rows, err := s.rquery(ctx, sqlFirstChanges, space, after, kj)
	if err != nil {
		return nil, wrap("first changes", err)
	}
	defer rows.Close()
	for rows.Next() {
		_, ch, err := scanChange(rows)
		if err != nil {
			return nil, wrap("first changes", err)
		}
		k := store.EntityKey{Type: ch.Type, ID: ch.ID}
		if _, ok := out[k]; !ok {
			out[k] = ch
		}
	}
	return out, wrap("first changes", rows.Err())
}

// rowsQuery builds the Rows statement. Its shape depends only on which
// filters are set (values travel as JSON arrays through json_each), so the
// statement cache holds few shapes. Type filters use +entity_type so that
// only an entity filter reaches for the commits_entity index.
func rowsQuery(p *store.RowsParams) (string, []any, error) {
	var b strings.Builder
	args := []any{p.Space, p.Lo, p.Hi}
	b.WriteString(`SELECT seq, ts, actor, op, entity_id, entity_type, payload FROM commits`)
	f := &p.Filter
	if f.EntityType != "" {
		b.WriteString(` INDEXED BY commits_entity`)
	}
	b.WriteString(` WHERE space = ? AND seq > ? AND seq <= ?`)
	if f.EntityType != "" {
		b.WriteString(` AND entity_type = ? AND entity_id = ?`)
		args = append(args, f.EntityType, f.EntityID)
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
		js, err := marshal(l.vals)
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
	if p.Desc {
		b.WriteString(` ORDER BY seq DESC LIMIT ?`)
	} else {
		b.WriteString(` ORDER BY seq LIMIT ?`)
	}
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
// It reads the commits and then their changes by seq range in one read
// transaction, so a concurrent prune cannot split a page.
func (s *Store) Commits(ctx context.Context, p store.CommitsParams) ([]store.Commit, error) {
	if err := prepare(ctx, &s.rstmts, s.r, sqlCommits, sqlChangesRange); err != nil {
		return nil, wrap("commits: prepare", err)
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, wrap("commits: begin", err)
	}
	defer func() { _ = tx.Rollback() }()
	out, err := s.readCommits(ctx, tx, p)
	if err != nil {
		return nil, wrap("commits", err)
	}
	if len(out) == 0 {
		return out, nil
	}
	err = s.attachChanges(ctx, tx, p.Space, out)
	return out, wrap("commits: changes", err)
}

const sqlCommits = `SELECT seq, ts, actor, op, entity_id, entity_type, payload, receipt, provenance
FROM commits WHERE space = ? AND seq > ? ORDER BY seq LIMIT ?`

func (s *Store) readCommits(ctx context.Context, tx *sql.Tx, p store.CommitsParams) ([]store.Commit, error) {
	st, err := txStmt(ctx, &s.rstmts, tx, sqlCommits)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, p.Space, p.After, limitArg(p.Limit))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []store.Commit{}
	for rows.Next() {
		var rt, pt string
		row, err := scanRow(rows, &rt, &pt)
		if err != nil {
			return nil, err
		}
		c := store.Commit{Row: row, Changes: []store.Change{}}
		if c.Receipt, err = decodeReceipt(rt); err != nil {
			return nil, fmt.Errorf("seq %d receipt: %w", row.Seq, err)
		}
		if err := json.Unmarshal([]byte(pt), &c.Provenance); err != nil {
			return nil, fmt.Errorf("seq %d provenance: %w", row.Seq, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

const sqlChangesRange = `SELECT ` + changeCols + ` FROM changes AS c
WHERE c.space = ? AND c.seq >= ? AND c.seq <= ? ORDER BY c.seq, c.ordinal`

// attachChanges reads the changes of commits (ascending by seq) in one
// range query and attaches them.
func (s *Store) attachChanges(ctx context.Context, tx *sql.Tx, space string, commits []store.Commit) error {
	st, err := txStmt(ctx, &s.rstmts, tx, sqlChangesRange)
	if err != nil {
		return err
	}
	lo, hi := commits[0].Seq, commits[len(commits)-1].Seq
	rows, err := st.QueryContext(ctx, space, lo, hi)
	if err != nil {
		return err
	}
	defer rows.Close()
	i := 0
	for rows.Next() {
		seq, ch, err := scanChange(rows)
		if err != nil {
			return err
		}
		for i < len(commits) && commits[i].Seq < seq {
			i++
		}
		if i < len(commits) && commits[i].Seq == seq {
			commits[i].Changes = append(commits[i].Changes, ch)
		}
	}
	return rows.Err()
}
