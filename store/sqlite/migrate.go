package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one embedded, numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations ordered by version. Files are
// named NNNN_name.sql.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	out := make([]migration, 0, len(names))
	for _, p := range names {
		base := strings.TrimSuffix(p[len("migrations/"):], ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("bad migration name %q", p)
		}
		body, err := migrationFS.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("duplicate migration version %d", out[i].version)
		}
	}
	return out, nil
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL
)`

// Migrate applies the embedded migrations that have not run, each in its
// own BEGIN IMMEDIATE transaction, so two processes migrating at once
// serialize on the database write lock and each migration runs once.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	for _, m := range ms {
		if err := s.writeTx(ctx, func(tx *sql.Tx) error { return applyMigration(ctx, tx, m) }); err != nil {
			return fmt.Errorf("sqlite: migrate %04d_%s: %w", m.version, m.name, err)
		}
	}
	return nil
}

// applyMigration runs m inside tx unless schema_migrations records it.
func applyMigration(ctx context.Context, tx *sql.Tx, m migration) error {
	if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
		return err
	}
	var n int
	err := tx.QueryRowContext(ctx,
		`SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n)
	if err != nil || n > 0 {
		return err
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UnixMicro())
	return err
}
