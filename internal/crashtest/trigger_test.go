package crashtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/definitions"
	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
)

// tasks is how many task rows the trigger crash test delivers.
const tasks = 300

func TestTriggerCrashSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "eddy.db")
	triggerCrash(t, "sqlite:"+path, func(ctx context.Context) (store.Store, error) { return sqlite.Open(ctx, path) })
}

func TestTriggerCrashPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	triggerCrash(t, url, func(ctx context.Context) (store.Store, error) { return postgres.Open(ctx, url) })
}

// triggerCrash kills a process running a trigger's deliveries with
// SIGKILL mid-stream, twice, starting a new one each time; in the end
// every task row has had exactly one delivery succeed and exactly one
// function-authored row caused by it: an in-process function's writes
// commit with its delivery's completion, so a killed attempt leaves
// nothing and runs again.
func triggerCrash(t *testing.T, dsn string, open func(context.Context) (store.Store, error)) {
	t.Helper()
	ctx := context.Background()
	st, err := open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	log := changelog.New(st, changelog.Options{})
	defer func() { _ = log.Close() }()
	seed(t, log)
	bin := buildProgram(t, "triggerproc")
	data := t.TempDir()
	for round := 1; round <= 2; round++ {
		started := runTriggerProc(t, bin, dsn, data, fmt.Sprintf("p%d", round), 40)
		t.Logf("round %d: %d deliveries started before the kill", round, started)
	}
	runUntilSettled(t, bin, dsn, data, st)
	verifyOnce(t, log, st)
}

// seed creates the space, the function and the trigger (from the
// beginning, so the rows written before any process runs count) and the
// task rows.
func seed(t *testing.T, log *changelog.Log) {
	t.Helper()
	ctx := context.Background()
	if _, err := log.EnsureSpace(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	defs := definitions.New(log, definitions.Options{})
	if _, _, err := defs.PutFunction(ctx, "default", "stamp", []byte(`{"kind":"go","handler":"stamp","writes":["task"]}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := defs.PutTrigger(ctx, "default", "stamp", []byte(`{"source":{"changes":{"types":["task"],"ops":["put"]}},"function":"stamp","start":"beginning","delivery":{"concurrency":4,"backoff":{"initial":"10ms","max":"50ms"}}}`)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < tasks; i += 50 {
		var ms []changelog.Mutation
		for j := i; j < i+50; j++ {
			ms = append(ms, changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: fmt.Sprintf("t%04d", j), Properties: json.RawMessage(`{"n":1}`)})
		}
		if _, err := log.Write(ctx, changelog.WriteRequest{Space: "default", Mutations: ms, Provenance: store.Provenance{Actor: "owner", Via: "api"}}); err != nil {
			t.Fatal(err)
		}
	}
}

// buildProgram builds a program of this directory into a temporary one.
func buildProgram(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command("go", "build", "-o", bin, "github.com/eddy-run/eddy/internal/crashtest/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, out)
	}
	return bin
}

// runTriggerProc starts the process and SIGKILLs it once it started
// killAt deliveries; it returns how many it started.
func runTriggerProc(t *testing.T, bin, dsn, data, owner string, killAt int) int {
	t.Helper()
	cmd := exec.Command(bin, "-dsn", dsn, "-data", data, "-owner", owner)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	watchdog := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer watchdog.Stop()
	sc := bufio.NewScanner(stdout)
	started := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "started ") {
			started++
		}
		if started == killAt {
			_ = cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	_ = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("trigger process ended on its own after %d deliveries: %s", started, stderr.String())
	}
	return started
}

// runUntilSettled starts a last process and stops it once every delivery
// succeeded.
func runUntilSettled(t *testing.T, bin, dsn, data string, st store.Store) {
	t.Helper()
	cmd := exec.Command(bin, "-dsn", dsn, "-data", data, "-owner", "last")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	polltest.Within(t, 60*time.Second, "every delivery to succeed", func() bool {
		stats, err := st.DeliveryStats(context.Background(), "default", "stamp")
		if err != nil {
			t.Fatal(err)
		}
		return stats.ByStatus[store.DeliverySucceeded] == tasks
	})
}

// verifyOnce checks every task got exactly one stamp row, caused by its
// put, authored by the trigger.
func verifyOnce(t *testing.T, log *changelog.Log, st store.Store) {
	t.Helper()
	stamps := map[int64]int{}
	var after int64
	for {
		p, err := log.Pull(context.Background(), "default", after, 500)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Commits {
			if c.Actor == "trigger:stamp" {
				stamps[c.Provenance.CausedBy]++
			}
		}
		after = p.NextCursor
		if !p.HasMore {
			break
		}
	}
	if len(stamps) != tasks {
		t.Fatalf("%d tasks stamped, want %d", len(stamps), tasks)
	}
	for seq, n := range stamps {
		if n != 1 || seq < 1 || seq > tasks {
			t.Fatalf("row %d has %d stamp rows, want exactly 1", seq, n)
		}
	}
	ds, err := st.DeliveryList(context.Background(), store.DeliveryListParams{Space: "default", Trigger: "stamp"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != tasks {
		t.Fatalf("%d deliveries, want %d (one per row)", len(ds), tasks)
	}
}
