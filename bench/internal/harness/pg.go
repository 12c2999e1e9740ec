package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultPGURL is the server eddybench uses unless -pg or the
// environment says otherwise.
const DefaultPGURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// PGURLFromEnv is EDDY_TEST_DATABASE_URL (which the Makefile and CI
// set), else DefaultPGURL.
func PGURLFromEnv() string {
	if u := os.Getenv("EDDY_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultPGURL
}

// Database is a fresh PostgreSQL database created for one measurement.
type Database struct {
	// URL connects to it.
	URL   string
	admin string
	name  string
}

// NewDatabase creates an empty database eddybench_<random hex> on the
// server of admin.
func NewDatabase(ctx context.Context, admin string) (*Database, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "eddybench_" + hex.EncodeToString(b[:])
	if err := adminExec(ctx, admin, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("postgres: create database: %w", err)
	}
	u, err := url.Parse(admin)
	if err != nil {
		return nil, fmt.Errorf("postgres: admin url: %w", err)
	}
	u.Path = "/" + name
	return &Database{URL: u.String(), admin: admin, name: name}, nil
}

// Drop removes the database, closing whatever is still connected.
func (d *Database) Drop(ctx context.Context) error {
	if err := adminExec(ctx, d.admin, "DROP DATABASE IF EXISTS "+d.name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("postgres: drop database %s: %w", d.name, err)
	}
	return nil
}

// adminExec runs one statement on a short-lived connection.
func adminExec(ctx context.Context, admin, sql string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// PGVersion returns the server's version string ("PostgreSQL 16.4 ...").
func PGVersion(ctx context.Context, admin string) (string, error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "", fmt.Errorf("postgres: version: %w", err)
	}
	return "PostgreSQL " + v, nil
}

// Pool opens a pool of up to conns connections to url.
func Pool(ctx context.Context, url string, conns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: pool config: %w", err)
	}
	cfg.MaxConns = conns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: pool: %w", err)
	}
	return pool, nil
}

// RawTable is the raw PostgreSQL baseline: single-row autocommit INSERT
// transactions into a table with a bigserial key, in a fresh database.
type RawTable struct {
	pool *pgxpool.Pool
	db   *Database
}

// OpenRawTable creates a fresh database on the server of admin with the
// baseline's table and opens a pool of up to conns connections to it.
func OpenRawTable(ctx context.Context, admin string, conns int32) (*RawTable, error) {
	db, err := NewDatabase(ctx, admin)
	if err != nil {
		return nil, err
	}
	drop := func() error { return db.Drop(context.WithoutCancel(ctx)) }
	pool, err := Pool(ctx, db.URL, conns)
	if err != nil {
		return nil, errors.Join(err, drop())
	}
	r := &RawTable{pool: pool, db: db}
	if _, err := pool.Exec(ctx, `CREATE TABLE bl_rows (id bigserial PRIMARY KEY, space text NOT NULL, payload text NOT NULL)`); err != nil {
		return nil, errors.Join(fmt.Errorf("postgres: create table: %w", err), r.Close())
	}
	return r, nil
}

// Insert runs one autocommit INSERT of payload: one transaction, one
// WAL flush.
func (r *RawTable) Insert(ctx context.Context, payload string) error {
	_, err := r.pool.Exec(ctx, `INSERT INTO bl_rows (space, payload) VALUES ('bench', $1)`, payload)
	return err
}

// Close closes the pool and drops the database.
func (r *RawTable) Close() error {
	r.pool.Close()
	return r.db.Drop(context.Background())
}
