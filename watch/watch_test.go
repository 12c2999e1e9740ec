package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
	"github.com/eddy-run/eddy/store/sqlite"
)

// TestAppendRow: a row's line is json.Marshal's rendering of it, for
// rows as the store holds them (payloads compact, as the changelog
// writes every payload).
func TestAppendRow(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 8, 4, 10, 0, 0, 183742000, time.UTC)
	rows := []store.Row{
		{Seq: 1, TS: ts, Actor: "owner", Op: "put", EntityID: "t1", Type: "task", Payload: json.RawMessage(`{"created":true,"properties":["a","b"]}`)},
		{Seq: 2, TS: ts.Truncate(time.Second), Actor: "trigger:x", Op: "patch", EntityID: "a.b:c-d", Type: "task.tasks", Payload: json.RawMessage(`{"properties":["x"],"state":{"s":"done and dusted"}}`)},
		{Seq: 3, TS: ts, Actor: `we"ird\actor<>&`, Op: "put", EntityID: "ü", Type: "t", Payload: json.RawMessage(`{"properties":["<b>","é","a\u0026b"]}`)},
		{Seq: 4, TS: ts, Actor: "engine", Op: "fire", EntityID: "cron", Type: "eddy.trigger", Payload: nil},
		{Seq: 5, TS: ts, Actor: "x\u2028y", Op: "put", EntityID: "e", Type: "t", Payload: json.RawMessage("{\"k\":\"\u2028\"}")},
	}
	for _, r := range rows {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendRow(nil, &r); string(got) != string(want)+"\n" {
			t.Errorf("appendRow(%d) = %s\nwant %s", r.Seq, got, want)
		}
	}
	if got := string(appendBookmark(nil, 42)); got != "{\"bookmark\":42}\n" {
		t.Errorf("bookmark = %q", got)
	}
	got := string(appendError(nil, problem.New(problem.Compacted, "gone").With("horizon", int64(7))))
	if got != `{"error":{"code":"compacted","message":"gone","details":{"horizon":7}}}`+"\n" {
		t.Errorf("error frame = %q", got)
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := drivers[0].open(t)
	lg := changelog.New(st, changelog.Options{})

	never := New(lg, Options{})
	for range 2 {
		if err := never.Stop(ctx); err != nil {
			t.Fatalf("stop a hub never started: %v", err)
		}
	}
	if err := never.Start(ctx); !errors.Is(err, ErrStopped) {
		t.Errorf("start after stop = %v, want ErrStopped", err)
	}
	h := New(lg, Options{})
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatalf("second start: %v", err)
	}
	if h.Heartbeat() != DefaultHeartbeat {
		t.Errorf("heartbeat = %v", h.Heartbeat())
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var nilHub *Hub
	nilHub.Notify("s", 1) // a nil hub ignores wake-ups
}

func TestCompactedMidStream(t *testing.T) {
	t.Parallel()
	forEachDriver(t, Options{CatchUpBatch: 2}, func(e *env) {
		t := e.t
		e.write("task", 10)
		var once sync.Once
		e.hub.beforeCatchUp = func(pos int64) {
			if pos == 2 {
				once.Do(func() {
					if _, err := e.log.Prune(context.Background(), "s", 8); err != nil {
						t.Errorf("prune: %v", err)
					}
				})
			}
		}
		c := e.open("from=0", nil)
		for _, want := range []string{`{"bookmark":0}`, `"seq":1,`, `"seq":2,`} {
			if f := c.must(); !strings.Contains(string(f.Raw), want) {
				t.Fatalf("frame %s, want %s", f.Raw, want)
			}
		}
		f := c.must()
		if f.Error == nil || f.Error.Code != problem.Compacted || f.Error.Details["horizon"] != 8.0 {
			t.Fatalf("terminal frame = %s", f.Raw)
		}
		if _, err := c.next(); !errors.Is(err, io.EOF) {
			t.Errorf("after the terminal frame: %v, want EOF", err)
		}
	})
}

func TestFailureMidStream(t *testing.T) {
	t.Parallel()
	forEachDriver(t, Options{CatchUpBatch: 2}, func(e *env) {
		t := e.t
		e.write("task", 5)
		e.hub.beforeCatchUp = func(pos int64) {
			if pos == 2 {
				e.st.fail.Store(true)
			}
		}
		behind := e.open("from=0", nil)
		behind.must()
		behind.must()
		behind.must()
		const internal = `{"error":{"code":"internal","message":"internal error"}}` + "\n"
		if f := behind.must(); string(f.Raw) != internal {
			t.Errorf("behind: terminal frame = %s", f.Raw)
		}
		if _, err := behind.next(); !errors.Is(err, io.EOF) {
			t.Errorf("after the terminal frame: %v, want EOF", err)
		}

		// A caught-up watcher: the shared read fails, the watcher falls
		// back to its own read, which fails too.
		e.st.fail.Store(false)
		caught := e.open("", nil)
		if f := caught.must(); f.Bookmark == nil || *f.Bookmark != 5 {
			t.Fatalf("first frame = %s", f.Raw)
		}
		e.st.fail.Store(true)
		e.write("task", 1)
		if f := caught.must(); string(f.Raw) != internal {
			t.Errorf("caught up: terminal frame = %s", f.Raw)
		}
	})
}

// TestSharedRead checks that one commit costs one shared read, not one
// read per watcher.
func TestSharedRead(t *testing.T) {
	t.Parallel()
	forEachDriver(t, Options{}, func(e *env) {
		t := e.t
		clients := make([]*client, 20)
		for i := range clients {
			clients[i] = e.open("", nil)
			clients[i].must()
		}
		before := e.st.rows.Load()
		e.write("task", 1)
		for _, c := range clients {
			if f := c.must(); f.Seq == nil || *f.Seq != 1 {
				t.Fatalf("frame = %s", f.Raw)
			}
		}
		if n := e.st.rows.Load() - before; n > 2 {
			t.Errorf("%d row reads for one commit and 20 watchers, want at most 2", n)
		}
	})
}

// bigProps is a properties object whose payload lists 20 long names, so
// a row is about 4 KiB.
var bigProps = func() json.RawMessage {
	m := map[string]int{}
	for i := range 20 {
		m[fmt.Sprintf("%s_%04d", strings.Repeat("long_property_name_", 10), i)] = i
	}
	b, _ := json.Marshal(m)
	return b
}()

func TestSlowConsumer(t *testing.T) {
	t.Parallel()
	forEachDriver(t, Options{TailSize: 8, ReadBatch: 4, CatchUpBatch: 16}, func(e *env) {
		t := e.t
		c := e.open("", nil)
		if f := c.must(); f.Bookmark == nil || *f.Bookmark != 0 {
			t.Fatalf("first frame = %s", f.Raw)
		}
		// A burst of about 6 MiB (more than the socket buffers hold) that
		// the client does not read.
		const writers, requests, batch = 4, 40, 10
		start := time.Now()
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range requests {
					ms := make([]changelog.Mutation, batch)
					for j := range ms {
						ms[j] = changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: fmt.Sprintf("w%d-%d-%d", w, i, j), Properties: bigProps}
					}
					if _, err := e.log.Write(context.Background(), changelog.WriteRequest{Space: "s", Mutations: ms, Provenance: store.Provenance{Actor: "t", Via: "api"}}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		t.Logf("burst written in %v", time.Since(start))
		if d := e.hub.space("s").drops.Load(); d == 0 {
			t.Errorf("the watcher was never dropped from the fan-out; the test did not overflow its buffer")
		}
		for want := int64(1); want <= writers*requests*batch; want++ {
			f := c.must()
			if f.Seq == nil || *f.Seq != want {
				t.Fatalf("frame %.80s, want seq %d", f.Raw, want)
			}
		}
		t.Logf("read in %v", time.Since(start))
	})
}

func TestGaplessResume(t *testing.T) {
	t.Parallel()
	opts := Options{TailSize: 16, ReadBatch: 8, CatchUpBatch: 8, Heartbeat: 50 * time.Millisecond}
	for _, filter := range []string{"", "types=task"} {
		t.Run("filter="+filter, func(t *testing.T) {
			t.Parallel()
			forEachDriver(t, opts, func(e *env) { resumeRandomly(e, filter) })
		})
	}
}

// resumeRandomly watches with filter while writers append, disconnecting
// after a random number of frames and resuming from the last seq or
// bookmark, and checks every selected seq arrived exactly once.
func resumeRandomly(e *env, filter string) {
	t := e.t
	var final atomic.Int64
	var done atomic.Bool
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := range 100 {
				typ := []string{"task", "note"}[rand.IntN(2)]
				m := changelog.Mutation{Op: changelog.OpPut, Type: typ, EntityID: fmt.Sprintf("w%d-%d", w, i), Properties: json.RawMessage(`{"v":1}`)}
				if _, err := e.log.Write(context.Background(), changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}, Provenance: store.Provenance{Actor: "t", Via: "api"}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	go func() {
		wg.Wait()
		sp, _ := e.log.Space(context.Background(), "s")
		final.Store(sp.Head)
		done.Store(true)
	}()
	seen := map[int64]int{}
	pos := int64(0)
	for reconnects := 0; !done.Load() || pos < final.Load(); reconnects++ {
		c := e.open(fmt.Sprintf("from=%d&%s", pos, filter), nil)
		if f := c.must(); f.Bookmark == nil || *f.Bookmark != pos {
			t.Fatalf("reconnect %d: first frame %s, want bookmark %d", reconnects, f.Raw, pos)
		}
		for k := 1 + rand.IntN(20); k > 0 && (!done.Load() || pos < final.Load()); k-- {
			f := c.must()
			switch {
			case f.Seq != nil:
				if *f.Seq <= pos {
					t.Fatalf("seq %d after position %d", *f.Seq, pos)
				}
				seen[*f.Seq]++
				pos = *f.Seq
			case f.Bookmark != nil:
				pos = *f.Bookmark
			}
		}
		c.close()
	}
	f := changelog.Filter{}
	if filter != "" {
		f.Types = []string{"task"}
	}
	want := map[int64]int{}
	for cur := int64(0); cur < final.Load(); {
		page, err := e.log.Read(context.Background(), "s", cur, f, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Rows {
			want[r.Seq] = 1
		}
		cur = page.Cursor
	}
	if len(want) == 0 || fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("seen %d seqs (%v)\nwant %d (%v)", len(seen), seen, len(want), want)
	}
}

// notifyingStore is a store.Notifier whose notifications the test sends.
type notifyingStore struct {
	store.Store
	listeners chan func(string, int64)
}

func (n *notifyingStore) Listen(ctx context.Context, fn func(string, int64)) error {
	n.listeners <- fn
	<-ctx.Done()
	return ctx.Err()
}

// TestNotifier checks cross-process wake-ups: commits made through another
// Log (another process) reach a watcher only through the notifier.
func TestNotifier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, t.TempDir()+"/eddy.db")
	if err != nil {
		t.Fatal(err)
	}
	migrated(t, st)
	other := changelog.New(st, changelog.Options{}) // another process: no hook to our hub
	ns := &notifyingStore{Store: st, listeners: make(chan func(string, int64), 1)}
	e := newEnv(t, ns, Options{})
	if err := e.hub.Start(ctx); err != nil {
		t.Fatal(err)
	}
	notify := <-ns.listeners
	c := e.open("", nil)
	c.must()
	write := func(id string) {
		m := changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: id, Properties: json.RawMessage(`{}`)}
		if _, err := other.Write(ctx, changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}, Provenance: store.Provenance{Actor: "t", Via: "api"}}); err != nil {
			t.Fatal(err)
		}
	}
	write("a")
	notify("s", 1)
	if f := c.must(); f.Seq == nil || *f.Seq != 1 {
		t.Fatalf("frame = %s", f.Raw)
	}
	write("b")
	notify("", -1) // after a reconnect: every space re-reads
	if f := c.must(); f.Seq == nil || *f.Seq != 2 {
		t.Fatalf("frame = %s", f.Raw)
	}
}

// TestPostgresAcrossProcesses runs two stores on one database: commits
// through the first reach a watcher of the second by LISTEN/NOTIFY.
func TestPostgresAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	open := func() store.Store {
		st, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		return migrated(t, st)
	}
	writer := changelog.New(open(), changelog.Options{})
	reader := open()
	if _, ok := reader.(store.Notifier); !ok {
		t.Fatal("the postgres store is not a store.Notifier")
	}
	e := newEnv(t, reader, Options{})
	if err := e.hub.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c := e.open("", nil)
	c.must()
	for i := range 3 {
		m := changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: fmt.Sprint("t", i), Properties: json.RawMessage(`{}`)}
		if _, err := writer.Write(ctx, changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}, Provenance: store.Provenance{Actor: "t", Via: "api"}}); err != nil {
			t.Fatal(err)
		}
		if f := c.must(); f.Seq == nil || *f.Seq != int64(i+1) {
			t.Fatalf("frame = %s, want seq %d", f.Raw, i+1)
		}
	}
}

// TestWithoutTakeover runs a stream on net/http's own connection handling:
// frames, fan-out and the shutdown frame are the same.
func TestWithoutTakeover(t *testing.T) {
	t.Parallel()
	e := newEnv(t, drivers[0].open(t), Options{})
	e.hub.takeover = false
	e.write("task", 2)
	c := e.open("from=1", nil)
	if c.res.Header.Get("Content-Type") != ContentType || c.res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers = %v", c.res.Header)
	}
	for _, want := range []string{`{"bookmark":1}`, `{"seq":2,`} {
		if f := c.must(); !strings.HasPrefix(string(f.Raw), want) {
			t.Fatalf("frame %s, want %s", f.Raw, want)
		}
	}
	e.write("task", 1)
	if f := c.must(); f.Seq == nil || *f.Seq != 3 {
		t.Fatalf("frame = %s", f.Raw)
	}
	stopHub(t, e.hub)
	if f := c.must(); f.Error == nil || f.Error.Code != problem.Unavailable {
		t.Fatalf("terminal frame = %s", f.Raw)
	}
	if _, err := c.next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the terminal frame: %v, want EOF", err)
	}
}
