package sqlite

import (
	"context"
	"embed"
	"fmt"
	"time"

	"github.com/eddy-run/eddy/store/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at INTEGER NOT NULL
)`

// Migrate applies the embedded migrations that have not run, each in its
// own BEGIN IMMEDIATE transaction, so two processes migrating at once
// serialize on the database write lock and each migration runs once.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrations.List(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	for _, m := range ms {
		if err := s.writeTx(ctx, func(tx *connTx) error { return applyMigration(ctx, tx, m) }); err != nil {
			return fmt.Errorf("sqlite: migrate %04d_%s: %w", m.Version, m.Name, err)
		}
	}
	return nil
}

// applyMigration runs m inside tx unless schema_migrations records it.
func applyMigration(ctx context.Context, tx *connTx, m migrations.Migration) error {
	if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
		return err
	}
	var n int
	err := tx.QueryRowContext(ctx,
		`SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n)
	if err != nil || n > 0 {
		return err
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UnixMicro())
	return err
}
