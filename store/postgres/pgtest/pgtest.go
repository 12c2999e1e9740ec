// Package pgtest gives tests a fresh PostgreSQL database each: it creates
// a uniquely named database on the server named by EDDY_TEST_DATABASE_URL
// and drops it when the test ends. A server that cannot be reached fails
// the test; it never skips.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL is the environment variable naming the server tests use.
const EnvURL = "EDDY_TEST_DATABASE_URL"

// DefaultURL is the server used when EnvURL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// timeout bounds each administrative statement.
const timeout = 30 * time.Second

// AdminURL returns the URL of the server's administrative database: the
// value of EDDY_TEST_DATABASE_URL, else DefaultURL.
func AdminURL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return DefaultURL
}

// NewDatabase creates an empty database named eddy_test_<random hex>,
// registers a cleanup that drops it (WITH (FORCE), so open connections do
// not block the drop), and returns its URL.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	admin := AdminURL()
	name := "eddy_test_" + randomHex(tb)
	if err := adminExec(admin, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: cannot create a test database on %s (set %s to a reachable PostgreSQL server): %v",
			redact(admin), EnvURL, err)
	}
	tb.Cleanup(func() {
		if err := adminExec(admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := withDatabase(admin, name)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return u
}

// adminExec runs one statement on a short-lived connection to admin.
func adminExec(admin, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// withDatabase returns admin with its database replaced by name. It
// accepts URLs and keyword/value strings.
func withDatabase(admin, name string) (string, error) {
	if !strings.HasPrefix(admin, "postgres://") && !strings.HasPrefix(admin, "postgresql://") {
		return admin + " dbname=" + name, nil
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String(), nil
}

// randomHex returns 16 random hex digits.
func randomHex(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		tb.Fatalf("pgtest: random name: %v", err)
	}
	return hex.EncodeToString(b)
}

// redact hides a password in a URL for messages.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// AwaitOthersGone waits until no client other than its own connection is
// connected to the database at url. A process killed in the middle of a
// write may have left its last batch, whole, in the server's socket
// buffer: the server runs it, and may commit it, before it notices the
// client is gone. A crash test calls this before reading what the killed
// process left, so that nothing commits behind its reads.
func AwaitOthersGone(tb testing.TB, url string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatalf("pgtest: connect to %s: %v", redact(url), err)
	}
	defer conn.Close(context.Background())
	const others = `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`
	for {
		var n int
		if err := conn.QueryRow(ctx, others).Scan(&n); err != nil {
			tb.Fatalf("pgtest: count the database's other clients: %v", err)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("pgtest: %d other clients still connected after %s", n, timeout)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
