package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // the "external system": a SQLite file

	"github.com/eddy-run/eddy/client"
)

// external is the system the reconciler keeps in step with eddy: a
// SQLite file with one row per entity (tombstones kept, so an old answer
// can never bring a deleted entity back) and the cursor, written in the
// same transaction as the changes it covers.
type external struct {
	db *sql.DB
}

const schema = `
CREATE TABLE IF NOT EXISTS items (
	type       TEXT NOT NULL,
	id         TEXT NOT NULL,
	version    INTEGER NOT NULL,
	deleted    INTEGER NOT NULL DEFAULT 0,
	properties TEXT,
	PRIMARY KEY (type, id)
);
CREATE TABLE IF NOT EXISTS cursors (
	space    TEXT NOT NULL,
	type     TEXT NOT NULL,
	position INTEGER NOT NULL,
	PRIMARY KEY (space, type)
);`

// openExternal opens (creating) the external SQLite file at path.
func openExternal(ctx context.Context, path string) (*external, error) {
	q := url.Values{}
	// busy_timeout first, so the pragmas after it wait for a lock as
	// statements do (they run in order on every new connection). Two
	// connections turning a new file to WAL at once may still fail with
	// SQLITE_BUSY: the reconciler expects to be the file's only user.
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return nil, errors.Join(fmt.Errorf("create tables in %s: %w", path, err), db.Close())
	}
	return &external{db: db}, nil
}

// Close closes the file.
func (x *external) Close() error { return x.db.Close() }

// cursor returns the saved position of a space's collection.
func (x *external) cursor(ctx context.Context, space, typ string) (pos int64, ok bool, err error) {
	err = x.db.QueryRowContext(ctx, `SELECT position FROM cursors WHERE space = ? AND type = ?`, space, typ).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read cursor: %w", err)
	}
	return pos, true, nil
}

// change is what one watched row does to the external system: the
// entity as eddy has it now (Record), or its absence (Deleted, at
// Version).
type change struct {
	Type, ID string
	Record   *client.Record
	Version  int64
}

// apply writes changes and moves the cursor to pos (a negative pos
// leaves it) in one transaction. It is idempotent: an item only ever moves to a higher version, so
// applying a change again, or an older one, changes nothing. It returns
// how many items changed.
func (x *external) apply(ctx context.Context, space, typ string, pos int64, changes []change) (int, error) {
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	n := 0
	for _, c := range changes {
		k, err := upsert(ctx, tx, c)
		if err != nil {
			return 0, err
		}
		n += k
	}
	if pos >= 0 {
		if err := saveCursor(ctx, tx, space, typ, pos); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	return n, nil
}

// upsert writes one change if it is newer than what the item holds.
func upsert(ctx context.Context, tx *sql.Tx, c change) (int, error) {
	deleted, props, version := 1, sql.NullString{}, c.Version
	if c.Record != nil {
		deleted, props, version = 0, sql.NullString{String: string(c.Record.Properties), Valid: true}, c.Record.Version
	}
	res, err := tx.ExecContext(ctx, `
		INSERT INTO items (type, id, version, deleted, properties) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (type, id) DO UPDATE SET version = excluded.version, deleted = excluded.deleted, properties = excluded.properties
		WHERE excluded.version > items.version`,
		c.Type, c.ID, version, deleted, props)
	if err != nil {
		return 0, fmt.Errorf("write %s/%s: %w", c.Type, c.ID, err)
	}
	k, err := res.RowsAffected()
	return int(k), err
}

func saveCursor(ctx context.Context, tx *sql.Tx, space, typ string, pos int64) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO cursors (space, type, position) VALUES (?, ?, ?)
		ON CONFLICT (space, type) DO UPDATE SET position = excluded.position`, space, typ, pos)
	if err != nil {
		return fmt.Errorf("save cursor: %w", err)
	}
	return nil
}

// live returns the ids of the live items of typ.
func (x *external) live(ctx context.Context, typ string) (map[string]bool, error) {
	rows, err := x.db.QueryContext(ctx, `SELECT id FROM items WHERE type = ? AND deleted = 0`, typ)
	if err != nil {
		return nil, fmt.Errorf("read items: %w", err)
	}
	defer rows.Close()
	ids := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read items: %w", err)
		}
		ids[id] = true
	}
	return ids, rows.Err()
}
