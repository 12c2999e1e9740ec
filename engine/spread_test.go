package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// spreadTTL is the lease TTL of the spread tests.
const spreadTTL = time.Second

// cluster is several processes sharing one PostgreSQL database, running
// nine change triggers whose go function counts its runs.
type cluster struct {
	t     *testing.T
	procs map[string]*env
	names []string

	mu   sync.Mutex
	runs map[string]int // trigger/seq → runs
}

// newCluster starts a process per owner and saves the triggers through
// the first one.
func newCluster(t *testing.T, owners ...string) *cluster {
	t.Helper()
	open := openPostgres(pgtest.NewDatabase(t))
	c := &cluster{t: t, procs: map[string]*env{}, runs: map[string]int{}}
	for _, o := range owners {
		e := newEnv(t, open(t), engine.Options{Owner: o, LeaseTTL: spreadTTL, Poll: 20 * time.Millisecond,
			Logger: slog.New(slog.DiscardHandler)})
		if err := e.reg.Register("count", c.count); err != nil {
			t.Fatal(err)
		}
		c.procs[o] = e
	}
	first := c.procs[owners[0]]
	first.function("count", `{"kind":"go","handler":"count"}`)
	for i := range 9 {
		name := fmt.Sprintf("watch%d", i)
		c.names = append(c.names, name)
		first.trigger(name, `{"source":{"changes":{"types":["task"]}},"function":"count"}`)
	}
	return c
}

// count is the triggers' handler: it records one run.
func (c *cluster) count(_ context.Context, in functions.Input) ([]changelog.Mutation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[fmt.Sprintf("%s/%d", in.Trigger, in.Row.Seq)]++
	return nil, nil
}

// leases returns trigger → owner and trigger → epoch as e reads them,
// the owner "" when the lease is not live.
func (c *cluster) leases(e *env) (map[string]string, map[string]int64) {
	c.t.Helper()
	owners, epochs := map[string]string{}, map[string]int64{}
	for _, name := range c.names {
		st := e.status(name)
		epochs[name] = st.Epoch
		if st.LeaseExpires != nil && st.LeaseExpires.After(time.Now()) {
			owners[name] = st.Owner
		}
	}
	return owners, epochs
}

// spread waits until every trigger's lease is live and held by one of
// owners, each holding its fair share or one less, failing the test if
// that takes longer than limit after start; it returns how long after
// start it happened and the owners.
func (c *cluster) spread(e *env, start time.Time, limit time.Duration, owners ...string) (time.Duration, map[string]string) {
	c.t.Helper()
	share := (len(c.names) + len(owners) - 1) / len(owners)
	var held map[string]string
	polltest.Within(c.t, limit-time.Since(start), fmt.Sprintf("leases spread over %v", owners), func() bool {
		held, _ = c.leases(e)
		count := map[string]int{}
		for _, o := range held {
			count[o]++
		}
		ok := len(held) == len(c.names)
		for o, n := range count {
			ok = ok && slices.Contains(owners, o) && n <= share && n >= share-1
		}
		return ok
	})
	return time.Since(start), held
}

// writeTasks writes n tasks one commit each and returns their seqs.
func (c *cluster) writeTasks(e *env, prefix string, n int) []int64 {
	c.t.Helper()
	var seqs []int64
	for i := range n {
		seqs = append(seqs, e.write(put("task", fmt.Sprintf("%s%d", prefix, i), map[string]any{"n": i})))
	}
	return seqs
}

// exactlyOnce checks that every trigger has exactly one succeeded
// delivery per row of seqs, and none for other rows; with runs set, that
// the handler ran exactly once per trigger and row.
func (c *cluster) exactlyOnce(e *env, seqs []int64, runs bool) {
	c.t.Helper()
	e.settle()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range c.names {
		got := map[int64]int{}
		for _, d := range e.deliveries(name) {
			if d.Status != store.DeliverySucceeded {
				c.t.Fatalf("%s: delivery %+v", name, d)
			}
			got[d.Seq]++
		}
		if len(got) != len(seqs) {
			c.t.Fatalf("%s: deliveries for rows %v, want %v", name, slices.Sorted(maps.Keys(got)), seqs)
		}
		for _, seq := range seqs {
			if got[seq] != 1 {
				c.t.Fatalf("%s: %d deliveries for row %d", name, got[seq], seq)
			}
			if n := c.runs[fmt.Sprintf("%s/%d", name, seq)]; runs && n != 1 {
				c.t.Fatalf("%s: row %d ran %d times", name, seq, n)
			}
		}
	}
}

// Three processes split nine triggers three each and deliver every row
// once per trigger; a process shutting down hands its triggers to the
// other two, which take them with a new epoch, and nothing else moves.
func TestTriggersSpreadOverProcesses(t *testing.T) {
	c := newCluster(t, "a", "b", "c")
	a := c.procs["a"]
	took, _ := c.spread(a, time.Now(), 10*time.Second, "a", "b", "c")
	t.Logf("spread over three processes in %v", took)
	// Balanced, nothing moves: a few rounds later every epoch is the same.
	_, epochs := c.leases(a)
	time.Sleep(spreadTTL) // a few lease rounds pass: nothing may move
	owners, again := c.leases(a)
	if !maps.Equal(epochs, again) {
		t.Fatalf("leases moved while balanced: epochs %v, then %v", epochs, again)
	}
	seqs := c.writeTasks(a, "t", 10)
	c.exactlyOnce(a, seqs, true)

	closed := time.Now()
	_ = c.procs["b"].eng.Stop(context.Background())
	seqs = append(seqs, c.writeTasks(a, "u", 10)...)
	took, after := c.spread(a, closed, 2*spreadTTL, "a", "c")
	t.Logf("b's triggers taken over in %v", took)
	seqs = append(seqs, c.writeTasks(c.procs["c"], "v", 10)...)
	c.exactlyOnce(a, seqs, true)
	c.moved(a, owners, after, epochs, "b")
}

// moved checks that exactly the triggers of gone changed owner, each with
// a greater epoch, and that the others kept their owner and epoch.
func (c *cluster) moved(e *env, before, after map[string]string, epochs map[string]int64, gone string) {
	c.t.Helper()
	_, now := c.leases(e)
	for _, name := range c.names {
		switch {
		case before[name] == gone && (after[name] == gone || now[name] <= epochs[name]):
			c.t.Fatalf("%s of %s: now %s at epoch %d (was %d)", name, gone, after[name], now[name], epochs[name])
		case before[name] != gone && (after[name] != before[name] || now[name] != epochs[name]):
			c.t.Fatalf("%s moved from %s@%d to %s@%d", name, before[name], epochs[name], after[name], now[name])
		}
	}
}

// A process that loses the database (its store closes under it) stops
// renewing: after the TTL the other two take its triggers over with a
// new epoch, and every row still gets exactly one delivery per trigger.
func TestTriggersMoveOffADeadProcess(t *testing.T) {
	c := newCluster(t, "a", "b", "c")
	a := c.procs["a"]
	c.spread(a, time.Now(), 10*time.Second, "a", "b", "c")
	owners, epochs := c.leases(a)
	seqs := c.writeTasks(a, "t", 10)
	c.exactlyOnce(a, seqs, true)

	died := time.Now()
	if err := c.procs["b"].st.Close(); err != nil {
		t.Fatal(err)
	}
	seqs = append(seqs, c.writeTasks(a, "u", 10)...)
	took, after := c.spread(a, died, 2*spreadTTL, "a", "c")
	t.Logf("b's triggers taken over %v after it died", took)
	seqs = append(seqs, c.writeTasks(c.procs["c"], "v", 10)...)
	// b may have run a handler whose completion it could not write; the
	// new holder runs it again, and only one run commits.
	c.exactlyOnce(a, seqs, false)
	c.moved(a, owners, after, epochs, "b")
}
