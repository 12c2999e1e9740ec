package client

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	_ "modernc.org/sqlite" // the SQLite driver

	"github.com/eddy-run/eddy/store"
)

// sqliteSchema is the local replica's tables.
const sqliteSchema = `
CREATE TABLE IF NOT EXISTS entities (
	space TEXT NOT NULL, type TEXT NOT NULL, id TEXT NOT NULL,
	version INTEGER NOT NULL, tombstone INTEGER NOT NULL,
	record BLOB, record_version INTEGER NOT NULL, owners TEXT NOT NULL,
	PRIMARY KEY (space, type, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS progress (
	fingerprint TEXT PRIMARY KEY, space TEXT NOT NULL, data TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pending (
	space TEXT NOT NULL, client_id TEXT NOT NULL, ordinal INTEGER NOT NULL, mutation TEXT NOT NULL,
	PRIMARY KEY (space, client_id, ordinal)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
	space TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
	PRIMARY KEY (space, key)) WITHOUT ROWID;
`

// SQLite is a ClientState in a SQLite file (modernc.org/sqlite, no cgo).
// Each StateTx is one SQLite transaction (BEGIN IMMEDIATE), so a page
// is published whole or, after a crash, not at all.
type SQLite struct {
	db *sql.DB
	// stmts are the prepared statements, by SQL text.
	stmts map[string]*sql.Stmt
}

// OpenSQLite opens (creating if need be) the local replica at path.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	q := url.Values{}
	// busy_timeout first, so the pragmas after it wait for a lock as
	// statements do (they run in order on every new connection).
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, sqliteSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: create tables: %w", path, err)
	}
	s := &SQLite{db: db, stmts: map[string]*sql.Stmt{}}
	for _, text := range allStatements {
		st, err := db.PrepareContext(ctx, text)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("open %s: prepare: %w", path, err)
		}
		s.stmts[text] = st
	}
	return s, nil
}

// Close closes the database.
func (s *SQLite) Close() error { return s.db.Close() }

// Begin opens a transaction (BEGIN IMMEDIATE).
func (s *SQLite) Begin(ctx context.Context) (StateTx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	return &sqliteTx{s: s, tx: tx, ctx: ctx}, nil
}

const (
	qEntity     = `SELECT version, tombstone, record, record_version, owners FROM entities WHERE space=? AND type=? AND id=?`
	qPutEntity  = `INSERT OR REPLACE INTO entities (space, type, id, version, tombstone, record, record_version, owners) VALUES (?,?,?,?,?,?,?,?)`
	qEntities   = `SELECT type, id, version, tombstone, record, record_version, owners FROM entities WHERE space=? AND (?='' OR type=?) ORDER BY type, id`
	qEntitiesOf = `SELECT e.type, e.id, e.version, e.tombstone, e.record, e.record_version, e.owners FROM json_each(?2) AS j
		CROSS JOIN entities AS e WHERE e.space=?1 AND e.type=j.value->>0 AND e.id=j.value->>1`
	qProgress     = `SELECT data FROM progress WHERE fingerprint=?`
	qPutProgress  = `INSERT OR REPLACE INTO progress (fingerprint, space, data) VALUES (?,?,?)`
	qDelProgress  = `DELETE FROM progress WHERE fingerprint=?`
	qViews        = `SELECT data FROM progress ORDER BY space, fingerprint`
	qPending      = `SELECT client_id, ordinal, mutation FROM pending WHERE space=? ORDER BY client_id, ordinal`
	qPutPending   = `INSERT OR REPLACE INTO pending (space, client_id, ordinal, mutation) VALUES (?,?,?,?)`
	qDropPending  = `DELETE FROM pending WHERE space=? AND client_id=? AND ordinal<=?`
	qMeta         = `SELECT value FROM meta WHERE space=? AND key=?`
	qPutMeta      = `INSERT OR REPLACE INTO meta (space, key, value) VALUES (?,?,?)`
	qDropEntities = `DELETE FROM entities WHERE space=?`
	qDropProgress = `DELETE FROM progress WHERE space=?`
)

var allStatements = []string{qEntity, qPutEntity, qEntities, qEntitiesOf, qProgress, qPutProgress, qDelProgress, qViews,
	qPending, qPutPending, qDropPending, qMeta, qPutMeta, qDropEntities, qDropProgress}

// sqliteTx is one transaction of a SQLite state.
type sqliteTx struct {
	s     *SQLite
	tx    *sql.Tx
	ctx   context.Context
	stmts map[string]*sql.Stmt // bound to tx, made on first use
}

func (t *sqliteTx) stmt(q string) *sql.Stmt {
	if st, ok := t.stmts[q]; ok {
		return st
	}
	if t.stmts == nil {
		t.stmts = make(map[string]*sql.Stmt, 4)
	}
	st := t.tx.StmtContext(t.ctx, t.s.stmts[q])
	t.stmts[q] = st
	return st
}

func (t *sqliteTx) exec(q string, args ...any) error {
	if _, err := t.stmt(q).ExecContext(t.ctx, args...); err != nil {
		return fmt.Errorf("local state: %w", err)
	}
	return nil
}

func joinOwners(o []string) string { return strings.Join(o, ",") }

func splitOwners(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (t *sqliteTx) Entity(space, typ, id string) (Entity, bool, error) {
	e := Entity{Space: space, Type: typ, ID: id}
	var owners string
	err := t.stmt(qEntity).QueryRowContext(t.ctx, space, typ, id).Scan(&e.Version, &e.Tombstone, (*rawBytes)(&e.Record), &e.RecordVersion, &owners)
	if errors.Is(err, sql.ErrNoRows) {
		return Entity{}, false, nil
	}
	if err != nil {
		return Entity{}, false, fmt.Errorf("local state: read %s/%s: %w", typ, id, err)
	}
	e.Owners = splitOwners(owners)
	return e, true, nil
}

func (t *sqliteTx) EntitiesOf(space string, keys []store.EntityKey) (map[store.EntityKey]Entity, error) {
	out := make(map[store.EntityKey]Entity, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		pairs[i] = [2]string{k.Type, k.ID}
	}
	list, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	rows, err := t.stmt(qEntitiesOf).QueryContext(t.ctx, space, string(list))
	if err != nil {
		return nil, fmt.Errorf("local state: read entities: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		e := Entity{Space: space}
		var owners string
		if err := rows.Scan(&e.Type, &e.ID, &e.Version, &e.Tombstone, (*rawBytes)(&e.Record), &e.RecordVersion, &owners); err != nil {
			return nil, fmt.Errorf("local state: read entities: %w", err)
		}
		e.Owners = splitOwners(owners)
		out[store.EntityKey{Type: e.Type, ID: e.ID}] = e
	}
	return out, rows.Err()
}

func (t *sqliteTx) PutEntity(e Entity) error {
	var rec any
	if e.Record != nil {
		rec = []byte(e.Record)
	}
	return t.exec(qPutEntity, e.Space, e.Type, e.ID, e.Version, e.Tombstone, rec, e.RecordVersion, joinOwners(e.Owners))
}

func (t *sqliteTx) Entities(space, typ string) ([]Entity, error) {
	rows, err := t.stmt(qEntities).QueryContext(t.ctx, space, typ, typ)
	if err != nil {
		return nil, fmt.Errorf("local state: list: %w", err)
	}
	defer rows.Close()
	var out []Entity
	for rows.Next() {
		e := Entity{Space: space}
		var owners string
		if err := rows.Scan(&e.Type, &e.ID, &e.Version, &e.Tombstone, (*rawBytes)(&e.Record), &e.RecordVersion, &owners); err != nil {
			return nil, fmt.Errorf("local state: list: %w", err)
		}
		e.Owners = splitOwners(owners)
		out = append(out, e)
	}
	return out, rows.Err()
}

func (t *sqliteTx) Progress(fp string) (Progress, bool, error) {
	var data string
	err := t.stmt(qProgress).QueryRowContext(t.ctx, fp).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return Progress{}, false, nil
	}
	if err != nil {
		return Progress{}, false, fmt.Errorf("local state: progress: %w", err)
	}
	var p Progress
	if err := json.Unmarshal([]byte(data), &p); err != nil {
		return Progress{}, false, fmt.Errorf("local state: progress of %s: %w", fp, err)
	}
	return p, true, nil
}

func (t *sqliteTx) PutProgress(p Progress) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("local state: progress: %w", err)
	}
	return t.exec(qPutProgress, p.Context.Fingerprint, p.Context.Space, string(b))
}

func (t *sqliteTx) DeleteProgress(fp string) error { return t.exec(qDelProgress, fp) }

func (t *sqliteTx) Views() ([]Progress, error) {
	rows, err := t.stmt(qViews).QueryContext(t.ctx)
	if err != nil {
		return nil, fmt.Errorf("local state: views: %w", err)
	}
	defer rows.Close()
	var out []Progress
	for rows.Next() {
		var data string
		var p Progress
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("local state: views: %w", err)
		}
		if err := json.Unmarshal([]byte(data), &p); err != nil {
			return nil, fmt.Errorf("local state: views: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (t *sqliteTx) DropSpace(space string) error {
	for _, q := range []string{qDropEntities, qDropProgress} {
		if err := t.exec(q, space); err != nil {
			return err
		}
	}
	return nil
}

func (t *sqliteTx) Pending(space string) ([]Pending, error) {
	rows, err := t.stmt(qPending).QueryContext(t.ctx, space)
	if err != nil {
		return nil, fmt.Errorf("local state: pending: %w", err)
	}
	defer rows.Close()
	var out []Pending
	for rows.Next() {
		p := Pending{Space: space}
		var m string
		if err := rows.Scan(&p.ClientID, &p.Ordinal, &m); err != nil {
			return nil, fmt.Errorf("local state: pending: %w", err)
		}
		if err := json.Unmarshal([]byte(m), &p.Mutation); err != nil {
			return nil, fmt.Errorf("local state: pending %d: %w", p.Ordinal, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (t *sqliteTx) PutPending(p Pending) error {
	b, err := json.Marshal(p.Mutation)
	if err != nil {
		return fmt.Errorf("local state: pending: %w", err)
	}
	return t.exec(qPutPending, p.Space, p.ClientID, p.Ordinal, string(b))
}

func (t *sqliteTx) DropPending(space, clientID string, through int64) error {
	return t.exec(qDropPending, space, clientID, through)
}

func (t *sqliteTx) Meta(space, key string) (string, bool, error) {
	var v string
	err := t.stmt(qMeta).QueryRowContext(t.ctx, space, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("local state: meta: %w", err)
	}
	return v, true, nil
}

func (t *sqliteTx) PutMeta(space, key, value string) error {
	return t.exec(qPutMeta, space, key, value)
}

func (t *sqliteTx) Commit() error {
	if err := t.tx.Commit(); err != nil {
		return fmt.Errorf("local state: commit: %w", err)
	}
	return nil
}

func (t *sqliteTx) Rollback() error {
	err := t.tx.Rollback()
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// rawBytes scans a nullable BLOB into a json.RawMessage (NULL: nil).
type rawBytes json.RawMessage

func (r *rawBytes) Scan(v any) error {
	switch b := v.(type) {
	case nil:
		*r = nil
	case []byte:
		*r = append(rawBytes(nil), b...)
	case string:
		*r = rawBytes(b)
	default:
		return fmt.Errorf("record column holds %T", v)
	}
	return nil
}
