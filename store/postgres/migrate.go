package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrateLockKey is the pg_advisory_xact_lock key serializing Migrate
// across processes.
const migrateLockKey int64 = 0x65646479_6d696772 // "eddymigr"

// Migrate applies the embedded migrations that have not run, in one
// transaction holding an advisory lock, so processes starting together
// apply each migration exactly once.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrations.List(migrationFS, "migrations")
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return migrateTx(ctx, tx, ms)
	})
	return wrap("migrate", err)
}

// migrateTx runs the pending migrations inside tx.
func migrateTx(ctx context.Context, tx pgx.Tx, ms []migrations.Migration) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLockKey); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`
	if _, err := tx.Exec(ctx, create); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("%s: %w", m.File, err)
		}
		const rec = "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)"
		if _, err := tx.Exec(ctx, rec, m.Version, m.File); err != nil {
			return fmt.Errorf("record %s: %w", m.File, err)
		}
	}
	return nil
}

// appliedVersions returns the versions recorded in schema_migrations.
func appliedVersions(ctx context.Context, tx pgx.Tx) (map[int]bool, error) {
	rows, err := tx.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	out := make(map[int]bool, len(vs))
	for _, v := range vs {
		out[int(v)] = true
	}
	return out, nil
}
