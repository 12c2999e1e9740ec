package crashtest_test

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
)

const pushClients = 4

func TestPushCrashSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "eddy.db")
	pushCrash(t, "sqlite", path, func(ctx context.Context) (store.Store, error) { return sqlite.Open(ctx, path) })
}

func TestPushCrashPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	pushCrash(t, "postgres", url, func(ctx context.Context) (store.Store, error) {
		pgtest.AwaitOthersGone(t, url) // as TestCrashPostgres
		return postgres.Open(ctx, url)
	})
}

// pushRun is what the pusher said before it died.
type pushRun struct {
	sent  map[string]int64           // client -> last ordinal sent
	acked map[string]map[int64]int64 // client -> ordinal -> seq
}

// pushCrash kills the pusher between a commit and its answer, then
// retries every ordinal each client sent, the way a client that lost its
// answers does: each ordinal must have exactly one commit, acknowledged
// ones at the seq they were acknowledged with.
func pushCrash(t *testing.T, driver, dsn string, open func(context.Context) (store.Store, error)) {
	t.Helper()
	bin := buildProgram(t, "pusher")
	run := runPusher(t, bin, driver, dsn)
	ctx := context.Background()
	st, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	unanswered := 0
	for c, m := range run.sent {
		pc, err := st.ClientGet(ctx, "s", c)
		if err != nil && m > 1 {
			t.Fatalf("client %s: %v", c, err)
		}
		if _, ok := run.acked[c][m]; !ok && pc.LastOrdinal == m {
			unanswered++ // committed, never answered
		}
	}
	if unanswered == 0 {
		t.Fatal("no push was committed and left unanswered: the kill did not land between commit and answer")
	}
	lg := changelog.New(st, changelog.Options{})
	defer lg.Close()
	total := int64(0)
	for c, m := range run.sent {
		retryAll(t, lg, c, m, run.acked[c])
		total += m
	}
	commits := pullAll(t, lg)
	if int64(len(commits)) != total {
		t.Fatalf("%d commits for %d ordinals", len(commits), total)
	}
	seen := map[string]bool{}
	for _, cm := range commits {
		if seen[cm.Provenance.MutationID] {
			t.Fatalf("ordinal %s committed twice", cm.Provenance.MutationID)
		}
		seen[cm.Provenance.MutationID] = true
	}
	t.Logf("%d ordinals, %d committed but unanswered before the kill, each committed once", total, unanswered)
}

// retryAll pushes ordinals 1..m of a client again.
func retryAll(t *testing.T, lg *changelog.Log, client string, m int64, acked map[int64]int64) {
	t.Helper()
	p := &changelog.Push{ClientID: client, Owner: "tok"}
	var ms []changelog.Mutation
	for o := int64(1); o <= m; o++ {
		p.Ordinals = append(p.Ordinals, o)
		ms = append(ms, changelog.Mutation{Op: changelog.OpPut, Type: "item", EntityID: fmt.Sprintf("%s-%d", client, o),
			Properties: fmt.Appendf(nil, `{"o":%d}`, o)})
	}
	res, err := lg.Write(context.Background(), changelog.WriteRequest{Space: "s", Provenance: store.Provenance{Actor: client}, Push: p, Mutations: ms})
	if err != nil {
		t.Fatalf("retry %s: %v", client, err)
	}
	if res.Push.Gap != nil || res.Push.LastOrdinal != m || len(res.Receipts) != int(m) {
		t.Fatalf("retry %s: %+v", client, res.Push)
	}
	for o, seq := range acked {
		if got := res.Receipts[o-1]; got.Seq != seq || got.Status != store.ReceiptApplied {
			t.Fatalf("%s ordinal %d was acknowledged at %d, its replay answers %+v", client, o, seq, got)
		}
	}
}

// runPusher runs the pusher until it stalls after a commit, kills it
// there with SIGKILL and returns what it said.
func runPusher(t *testing.T, bin, driver, dsn string) pushRun {
	t.Helper()
	cmd := exec.Command(bin, "-driver", driver, "-dsn", dsn, "-clients", fmt.Sprint(pushClients))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watchdog := time.AfterFunc(90*time.Second, func() { _ = cmd.Process.Kill() })
	defer watchdog.Stop()
	run := pushRun{sent: map[string]int64{}, acked: map[string]map[int64]int64{}}
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		var c string
		var o, seq int64
		switch line := sc.Text(); {
		case line == "stalled" && !killed:
			killed = true
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(line, "sent "):
			fmt.Sscanf(line, "sent %s %d", &c, &o)
			run.sent[c] = max(run.sent[c], o)
		case strings.HasPrefix(line, "ack "):
			fmt.Sscanf(line, "ack %s %d %d", &c, &o, &seq)
			if run.acked[c] == nil {
				run.acked[c] = map[int64]int64{}
			}
			run.acked[c][o] = seq
		}
	}
	_ = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !killed || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("pusher did not die of SIGKILL at its stall: %s", stderr.String())
	}
	return run
}
