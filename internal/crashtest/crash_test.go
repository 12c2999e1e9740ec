package crashtest_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	workers   = 4
	killAfter = 200 // acknowledgements before the SIGKILL
	rounds    = 2   // kill, reopen and verify this many times
)

func TestCrashSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "eddy.db")
	crash(t, "sqlite", path, func(ctx context.Context) (store.Store, error) { return sqlite.Open(ctx, path) })
}

func TestCrashPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	crash(t, "postgres", url, func(ctx context.Context) (store.Store, error) {
		// The dead writer's last batch may still run on the server (and
		// commit, after the space lock below was taken and released).
		pgtest.AwaitOthersGone(t, url)
		return postgres.Open(ctx, url)
	})
}

// crash kills the writer mid-stream rounds times, verifying the store
// after each kill. open reopens the store once whatever the dead writer
// left running has ended.
func crash(t *testing.T, driver, dsn string, open func(context.Context) (store.Store, error)) {
	t.Helper()
	bin := buildWriter(t)
	for round := 1; round <= rounds; round++ {
		acked := runAndKill(t, bin, driver, dsn, round)
		verify(t, open, acked, round)
	}
}

// buildWriter builds the writer program into a temporary directory.
func buildWriter(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go tool not found: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "writer")
	out, err := exec.Command(goBin, "build", "-o", bin, "github.com/eddy-run/eddy/internal/crashtest/writer").CombinedOutput()
	if err != nil {
		t.Fatalf("build writer: %v\n%s", err, out)
	}
	return bin
}

// runAndKill starts the writer, kills it with SIGKILL after killAfter
// acknowledgements and returns every seq it acknowledged.
func runAndKill(t *testing.T, bin, driver, dsn string, round int) []int64 {
	t.Helper()
	cmd := exec.Command(bin, "-driver", driver, "-dsn", dsn, "-workers", strconv.Itoa(workers), "-round", strconv.Itoa(round))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start writer: %v", err)
	}
	// A writer that stalls is killed too, and the test fails below.
	watchdog := time.AfterFunc(90*time.Second, func() { _ = cmd.Process.Kill() })
	defer watchdog.Stop()
	var acked []int64
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		line := sc.Text()
		seq, err := strconv.ParseInt(strings.TrimPrefix(line, "ack "), 10, 64)
		if err != nil || !strings.HasPrefix(line, "ack ") {
			t.Errorf("writer printed %q", line)
			continue
		}
		acked = append(acked, seq)
		if len(acked) == killAfter && !killed {
			killed = true
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill writer: %v", err)
			}
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("writer ended after %d acknowledgements (%v): %s", len(acked), err, stderr.String())
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("writer did not die of SIGKILL (%v): %s", err, stderr.String())
	}
	t.Logf("round %d: writer acknowledged %d commits before dying", round, len(acked))
	return acked
}

// verify reopens the store and checks it against what was acknowledged.
func verify(t *testing.T, open func(context.Context) (store.Store, error), acked []int64, round int) {
	t.Helper()
	ctx := context.Background()
	st, err := open(ctx)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	// Taking the space lock waits out any transaction the dead process
	// left open on the server (open has waited for its last batches).
	tx, err := st.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
	if err != nil {
		t.Fatalf("lock space: %v", err)
	}
	head := tx.Space().Head
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	log := changelog.New(st, changelog.Options{})
	defer func() { _ = log.Close() }()

	commits := pullAll(t, log)
	if int64(len(commits)) != head {
		t.Fatalf("round %d: %d commits, head %d", round, len(commits), head)
	}
	for _, seq := range acked {
		if seq < 1 || seq > head {
			t.Fatalf("round %d: acknowledged seq %d is missing (head %d)", round, seq, head)
		}
	}
	t.Logf("round %d: head %d, %d acknowledged", round, head, len(acked))
	last := wantWholeCommits(t, commits)
	wantRecords(t, st, last)

	res, err := log.Write(ctx, changelog.WriteRequest{Space: "s", Provenance: store.Provenance{Actor: "probe", Via: "api"},
		Mutations: []changelog.Mutation{{Op: changelog.OpPut, Type: "probe", EntityID: fmt.Sprintf("p%d", round),
			Properties: []byte(`{"ok":true}`)}}})
	if err != nil {
		t.Fatalf("write after the crash: %v", err)
	}
	if r := res.Receipts[0]; r.Status != store.ReceiptApplied || r.Seq != head+1 {
		t.Fatalf("write after the crash: receipt %+v, want applied at %d", r, head+1)
	}
}

// pullAll pulls every commit, checking seqs 1..n are gapless.
func pullAll(t *testing.T, log *changelog.Log) []store.Commit {
	t.Helper()
	var all []store.Commit
	var after int64
	for {
		p, err := log.Pull(context.Background(), "s", after, 500)
		if err != nil {
			t.Fatalf("pull after %d: %v", after, err)
		}
		for _, c := range p.Commits {
			if c.Seq != int64(len(all)+1) {
				t.Fatalf("commit %d follows %d: a gap", c.Seq, len(all))
			}
			all = append(all, c)
		}
		after = p.NextCursor
		if !p.HasMore {
			return all
		}
	}
}

// wantWholeCommits checks every commit carries the changes its op makes
// and returns the last change of every entity.
func wantWholeCommits(t *testing.T, commits []store.Commit) map[store.EntityKey]store.Change {
	t.Helper()
	last := map[store.EntityKey]store.Change{}
	for _, c := range commits {
		want := 1
		if c.Op == changelog.OpMerge {
			want = 2
		}
		if len(c.Changes) != want {
			t.Fatalf("commit %d (%s) has %d changes, want %d", c.Seq, c.Op, len(c.Changes), want)
		}
		for i, ch := range c.Changes {
			if ch.Ordinal != i || ch.Version != c.Seq {
				t.Fatalf("commit %d change %d: ordinal %d version %d", c.Seq, i, ch.Ordinal, ch.Version)
			}
			last[store.EntityKey{Type: ch.Type, ID: ch.ID}] = ch
		}
		if c.Op == changelog.OpMerge && c.Changes[1].Kind != store.ChangeDeleted {
			t.Fatalf("merge commit %d: second change is %s, want deleted", c.Seq, c.Changes[1].Kind)
		}
		if c.Receipt.Status != store.ReceiptApplied || c.Receipt.Seq != c.Seq {
			t.Fatalf("commit %d receipt %+v", c.Seq, c.Receipt)
		}
	}
	return last
}

// wantRecords checks every entity row matches the last change to it, and
// that no entity row exists without a commit.
func wantRecords(t *testing.T, st store.Store, last map[store.EntityKey]store.Change) {
	t.Helper()
	ctx := context.Background()
	for w := range workers {
		for _, id := range []string{fmt.Sprintf("w%d-a", w), fmt.Sprintf("w%d-b", w)} {
			key := store.EntityKey{Type: "item", ID: id}
			rec, err := st.EntityGet(ctx, "s", key)
			ch, changed := last[key]
			if !changed {
				if err == nil {
					t.Fatalf("entity %s exists without a commit: %+v", id, rec)
				}
				continue
			}
			if err != nil {
				t.Fatalf("entity %s: %v (last change at %d)", id, err, ch.Version)
			}
			if rec.Version != ch.Version {
				t.Fatalf("entity %s at version %d, its last change is at %d", id, rec.Version, ch.Version)
			}
			if ch.Kind == store.ChangeDeleted {
				if rec.Kind != store.KindDeleted {
					t.Fatalf("entity %s is %s, its last change deleted it", id, rec.Kind)
				}
				continue
			}
			if rec.Kind == store.KindDeleted || string(rec.Properties) != string(ch.After.Properties) {
				t.Fatalf("entity %s = %s %s, its last change left %s", id, rec.Kind, rec.Properties, ch.After.Properties)
			}
		}
	}
}
