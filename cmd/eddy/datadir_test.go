package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// serveOnce runs eddy serve to completion (it must fail) and returns its
// exit code and stderr.
func serveOnce(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stderr strings.Builder
	a := &app{stdout: io.Discard, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	code := a.run(context.Background(), append([]string{"serve"}, args...))
	return code, stderr.String()
}

// TestServeDataDirLocked: a second serve on a data directory in use exits
// non-zero naming the process that holds it, and leaves the admin token
// alone.
func TestServeDataDirLocked(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	_, _, stop := startServe(t, dir)
	defer stop()
	tokenPath := filepath.Join(dir, tokenFile)
	before, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	code, stderr := serveOnce(t, "--data", dir, "--addr", "127.0.0.1:0")
	want := fmt.Sprintf("in use by eddy process %d", os.Getpid())
	if code == exitOK || !strings.Contains(stderr, want) {
		t.Fatalf("second serve: exit %d, stderr %q; want non-zero and %q", code, stderr, want)
	}
	if after, _ := os.ReadFile(tokenPath); string(after) != string(before) {
		t.Fatal("the second serve rewrote admin.token")
	}
}

// TestServeNoListenNoToken: a serve that cannot listen writes no admin
// token (and creates none in the store).
func TestServeNoListenNoToken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "data")
	code, stderr := serveOnce(t, "--data", dir, "--addr", ln.Addr().String())
	if code == exitOK || !strings.Contains(stderr, "listen") {
		t.Fatalf("serve on a taken port: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, tokenFile)); !os.IsNotExist(err) {
		t.Fatalf("admin.token written by a serve that never listened: %v", err)
	}
	// The next start still creates the first admin token.
	_, stdout, stop := startServe(t, dir)
	defer stop()
	if !strings.Contains(stdout.String(), "admin token:") {
		t.Fatalf("first real start printed %q, want a new admin token", stdout.String())
	}
}

// TestServeSharedStoreKeepsToken: a second process on the same PostgreSQL
// database (with its own data directory) creates no admin token and
// writes no file: the first process's token stays the one.
func TestServeSharedStoreKeepsToken(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	_, outA, stopA := startServe(t, dirA, "--database", db)
	defer stopA()
	_, outB, stopB := startServe(t, dirB, "--database", db)
	defer stopB()
	if !strings.Contains(outA.String(), "admin token:") || strings.Contains(outB.String(), "admin token:") {
		t.Fatalf("first printed %q, second %q; want a token from the first only", outA.String(), outB.String())
	}
	if _, err := os.Stat(filepath.Join(dirB, tokenFile)); !os.IsNotExist(err) {
		t.Fatalf("second process wrote admin.token: %v", err)
	}
}

// TestServeFileModes: the data directory is 0700 and the SQLite files
// 0600.
func TestServeFileModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	_, _, stop := startServe(t, dir)
	defer stop()
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "eddy.db*"))
	if len(matches) == 0 {
		t.Fatal("no eddy.db files")
	}
	for _, p := range append(matches, filepath.Join(dir, tokenFile)) {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, %v; want 0600", filepath.Base(p), fi.Mode().Perm(), err)
		}
	}
}
