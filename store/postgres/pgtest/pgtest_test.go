package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestNewDatabase(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("create", func(t *testing.T) {
		u := NewDatabase(t)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
			t.Fatalf("current_database: %v", err)
		}
		if len(name) != len("eddy_test_")+16 {
			t.Fatalf("database name %q", name)
		}
	})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Fatalf("connect admin: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatalf("count: %v", err)
	}
	if n != 0 {
		t.Fatalf("database %s not dropped after the test", name)
	}
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		admin, want string
	}{
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/x?sslmode=disable"},
		{"postgresql://u:p@h/db", "postgresql://u:p@h/x"},
		{"postgres://h", "postgres://h/x"},
		{"host=h user=u dbname=postgres", "host=h user=u dbname=postgres dbname=x"},
	}
	for _, tt := range tests {
		got, err := withDatabase(tt.admin, "x")
		if err != nil || got != tt.want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", tt.admin, got, err, tt.want)
		}
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	if got := redact("postgres://u:secret@h/db"); got != "postgres://u:xxxxx@h/db" {
		t.Errorf("redact = %q", got)
	}
	if got := redact("postgres://u@h/db"); got != "postgres://u@h/db" {
		t.Errorf("redact = %q", got)
	}
}
