package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// buildEddy builds the eddy binary into a temp dir once per test.
func buildEddy(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "eddy")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// process is one running `eddy serve`.
type process struct {
	url, dir string
	cmd      *exec.Cmd
	done     chan struct{}

	mu     sync.Mutex
	stderr strings.Builder
}

func (p *process) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// startProcess runs bin serve on database with its own data dir on a free
// port, waits until /healthz answers 200, and stops it (SIGTERM) when the
// test ends, failing the test unless it exits 0.
func startProcess(t *testing.T, bin, database string, extra ...string) *process {
	t.Helper()
	p := &process{dir: t.TempDir(), done: make(chan struct{})}
	args := append([]string{"serve", "--database", database, "--addr", "127.0.0.1:0", "--data", p.dir}, extra...)
	p.cmd = exec.Command(bin, args...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start eddy serve: %v", err)
	}
	listening := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if u := listenURL.FindString(line); u != "" && strings.Contains(line, "listening on") {
				select {
				case listening <- u:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { p.stop(t) })
	select {
	case p.url = <-listening:
	case <-p.done:
		t.Fatalf("eddy serve exited before listening:\n%s", p.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("eddy serve did not listen:\n%s", p.log())
	}
	waitHealthy(t, p)
	return p
}

// shareToken copies from's admin.token into to's data directory: only the
// first process on a database writes one.
func shareToken(t *testing.T, from, to *process) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(from.dir, tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to.dir, tokenFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitHealthy waits for GET /healthz to answer 200.
func waitHealthy(t *testing.T, p *process) {
	t.Helper()
	waitFor(t, p.url+"/healthz", func() bool {
		resp, err := http.Get(p.url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// stop sends SIGTERM and waits for a clean exit (killing it after 15s).
func (p *process) stop(t *testing.T) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() {
		<-p.done // stderr drained
		exited <- p.cmd.Wait()
	}()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("eddy serve %s: %v\n%s", p.url, err, p.log())
		}
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-exited
		t.Errorf("eddy serve %s did not stop on SIGTERM:\n%s", p.url, p.log())
	}
}

// cli runs the in-process CLI against p with p's admin token.
func (p *process) cli(t *testing.T, args ...string) result {
	t.Helper()
	s := &testServer{url: p.url, dir: p.dir}
	return s.run(t, args...)
}

// TestTwoProcessesWatch runs two eddy serve processes on one PostgreSQL
// database: a watch on B sees every row written through A, woken by
// LISTEN/NOTIFY, also after B's listening connection is killed.
func TestTwoProcessesWatch(t *testing.T) {
	t.Parallel()
	database := pgtest.NewDatabase(t)
	bin := buildEddy(t)
	// A long heartbeat: rows must arrive by notification, not by the
	// idle timer.
	a := startProcess(t, bin, database, "--heartbeat", "1m")
	b := startProcess(t, bin, database, "--heartbeat", "1m")
	shareToken(t, a, b)

	stdout, stderr, stop := startWatchAt(t, b.url, b.dir, "--json", "--idle-timeout", "0")
	waitFor(t, "the opening bookmark", func() bool { return strings.HasPrefix(stdout.String(), `{"bookmark":0}`) })

	const n = 40
	var want []string
	for i := 1; i <= n; i++ {
		a.cli(t, "put", "task", fmt.Sprintf("t%02d", i), fmt.Sprintf(`{"i": %d}`, i)).ok(t)
		want = append(want, fmt.Sprintf(`"seq":%d,`, i))
	}
	waitRows(t, stdout, want)

	// Kill both processes' listening connections: they reconnect, and
	// rows keep flowing to B's watch.
	if k := terminateListeners(t, database); k != 2 {
		t.Fatalf("terminated %d listener connections, want 2", k)
	}
	waitFor(t, "both listeners back", func() bool { return countListeners(t, database) == 2 })
	for i := n + 1; i <= n+10; i++ {
		a.cli(t, "put", "task", fmt.Sprintf("t%02d", i), `{}`).ok(t)
		want = append(want, fmt.Sprintf(`"seq":%d,`, i))
	}
	waitRows(t, stdout, want)

	if code := stop(); code != exitOK {
		t.Fatalf("watch exit %d; stderr %s", code, stderr.String())
	}
	if s := stderr.String(); s != "" {
		t.Errorf("watch stderr: %s", s)
	}
}

// waitRows waits (10s) until the watch printed exactly the rows want, in
// order: each a fragment of its line.
func waitRows(t *testing.T, out *syncBuffer, want []string) {
	t.Helper()
	var rows []string
	polltest.Until(t, fmt.Sprintf("the watch to print %d rows", len(want)), func() bool {
		rows = nil
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(l, `{"seq":`) {
				rows = append(rows, l)
			}
		}
		return len(rows) >= len(want)
	})
	for i, w := range want {
		if !strings.Contains(rows[i], w) {
			t.Fatalf("row %d = %s, want %s", i, rows[i], w)
		}
	}
	if len(rows) > len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), out.String())
	}
}

// adminQuery runs one query on database and scans one int.
func adminQuery(t *testing.T, database, q string, args ...any) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, database)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// terminateListeners kills the database's listener connections.
func terminateListeners(t *testing.T, database string) int {
	t.Helper()
	return adminQuery(t, database, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, postgres.ListenApplicationName)
}

// countListeners counts the database's listener connections.
func countListeners(t *testing.T, database string) int {
	t.Helper()
	return adminQuery(t, database, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, postgres.ListenApplicationName)
}
