package views

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/watch"
)

// streamEnv is an env whose log wakes a watch hub, with an HTTP server
// that serves the live view stream of GET /{view}?cursor=&budget=.
type streamEnv struct {
	*env
	hub *watch.Hub
	srv *httptest.Server
}

func newStreamEnv(t testing.TB, st store.Store, heartbeat time.Duration) *streamEnv {
	t.Helper()
	var hub *watch.Hub
	lg := changelog.New(st, changelog.Options{OnCommit: func(space string, head int64) { hub.Notify(space, head) }})
	t.Cleanup(func() { _ = lg.Close() })
	hub = watch.New(lg, watch.Options{Heartbeat: heartbeat})
	if err := hub.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), st: st, log: lg, clock: nil}
	e.svc = New(lg, Options{Hub: hub})
	if _, err := lg.EnsureSpace(e.ctx, "s"); err != nil {
		t.Fatal(err)
	}
	se := &streamEnv{env: e, hub: hub}
	se.srv = httptest.NewUnstartedServer(http.HandlerFunc(se.serve))
	se.srv.Listener = smallBuffers{se.srv.Listener}
	se.srv.Start()
	t.Cleanup(se.srv.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := hub.Stop(ctx); err != nil {
			t.Errorf("stop hub: %v", err)
		}
	})
	return se
}

// smallBuffers gives every accepted connection a small send buffer, so
// a client that stops reading stalls its stream after a few frames.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

func (se *streamEnv) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	budget, _ := strconv.Atoi(q.Get("budget"))
	err := se.svc.Watch(w, r, DeltaParams{Space: "s", View: strings.TrimPrefix(r.URL.Path, "/"), Cursor: q.Get("cursor"), Budget: budget, Reader: admin})
	if err != nil {
		var pe *problem.Error
		if !errors.As(err, &pe) {
			pe = problem.New(problem.Internal, "%v", err)
		}
		w.WriteHeader(problem.Status(pe.Code))
		_ = json.NewEncoder(w).Encode(map[string]any{"error": pe})
	}
}

// liveStream reads a live view stream's lines on a goroutine.
type liveStream struct {
	t     testing.TB
	res   *http.Response
	lines chan string
	stop  context.CancelFunc
}

func (se *streamEnv) open(view, cursor string, budget int) *liveStream {
	se.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	u := se.srv.URL + "/" + view + "?cursor=" + cursor
	if budget > 0 {
		u += "&budget=" + strconv.Itoa(budget)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	res, err := se.srv.Client().Do(req)
	if err != nil {
		cancel()
		se.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != watch.ContentType {
		cancel()
		se.t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	ls := &liveStream{t: se.t, res: res, lines: make(chan string), stop: cancel}
	go func() {
		defer close(ls.lines)
		br := bufio.NewReader(res.Body)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			select {
			case ls.lines <- l:
			case <-ctx.Done():
				return
			}
		}
	}()
	se.t.Cleanup(ls.close)
	return ls
}

func (ls *liveStream) close() {
	ls.stop()
	ls.res.Body.Close()
	for range ls.lines { //nolint:revive // drain until the reader ends
	}
}

// next returns the next line that is not a heartbeat, decoded.
func (ls *liveStream) next() map[string]json.RawMessage {
	ls.t.Helper()
	for {
		select {
		case l, ok := <-ls.lines:
			if !ok {
				ls.t.Fatal("stream ended")
			}
			if l == "{}\n" {
				continue
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				ls.t.Fatalf("line %q: %v", l, err)
			}
			return m
		case <-time.After(10 * time.Second):
			ls.t.Fatal("no frame within 10s")
		}
	}
}

// ended fails unless the stream ends without another line.
func (ls *liveStream) ended() {
	ls.t.Helper()
	select {
	case l, ok := <-ls.lines:
		if ok {
			ls.t.Fatalf("line %q after the terminal frame", l)
		}
	case <-time.After(10 * time.Second):
		ls.t.Fatal("stream did not end")
	}
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// pageSummary renders a page frame's commits like summary.
func pageSummary(t testing.TB, m map[string]json.RawMessage) string {
	t.Helper()
	var p DeltaPage
	if err := json.Unmarshal(mustJSON(t, m), &p); err != nil {
		t.Fatal(err)
	}
	return summary(p)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (se *streamEnv) cursorNow(view string) string {
	se.t.Helper()
	pages := se.bootstrap(view, Keyset, 100, nil)
	return *pages[len(pages)-1].Cursor
}

func TestStreamPagesAndProgress(t *testing.T) {
	old := progressEvery
	progressEvery = 20 * time.Millisecond
	t.Cleanup(func() { progressEvery = old })
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			se := newStreamEnv(t, d.open(t), time.Hour)
			se.putView("alpha", alphaView)
			se.write(put("task", "old", `{"project":"alpha"}`))
			cur := se.cursorNow("alpha")
			ls := se.open("alpha", cur, 0)
			se.write(put("task", "t1", `{"project":"alpha"}`))
			f := ls.next()
			if str(f["previousCursor"]) != cur || pageSummary(t, f) != `2:upsert task/t1@2 {"project":"alpha"}` {
				t.Fatalf("page %s", mustJSON(t, f))
			}
			if len(f) != 3 {
				t.Fatalf("a stream page has keys %v, want previousCursor, cursor, commits", keysOf(f))
			}
			se.write(put("note", "n1", `{}`), put("note", "n2", `{}`)) // nothing for the view
			p := ls.next()
			if len(p) != 1 || str(p["cursor"]) == str(f["cursor"]) {
				t.Fatalf("progress %s", mustJSON(t, p))
			}
			se.write(patch("task", "t1", `{"project":"beta"}`))
			g := ls.next()
			if str(g["previousCursor"]) != str(p["cursor"]) || pageSummary(t, g) != "5:removed_from_scope task/t1@5" {
				t.Fatalf("page after progress %s", mustJSON(t, g))
			}
			// The stream's cursor is a delta cursor: a delta from it is empty.
			if dp := se.delta("alpha", str(g["cursor"]), 10); len(dp.Commits) != 0 || dp.HasMore {
				t.Fatalf("delta after the stream's cursor: %+v", dp)
			}
		})
	}
}

func keysOf(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestStreamCatchUp: a cursor far behind the feed's tail is served from
// the store in pages of the budget, then live.
func TestStreamCatchUp(t *testing.T) {
	old := feedTail
	feedTail = 4
	t.Cleanup(func() { feedTail = old })
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			se := newStreamEnv(t, d.open(t), time.Hour)
			se.putView("alpha", alphaView)
			cur := se.cursorNow("alpha")
			for i := range 25 {
				se.write(put("task", fmt.Sprint("t", i), `{"project":"alpha"}`))
			}
			ls := se.open("alpha", cur, 10)
			seen := 0
			prev := cur
			for seen < 30 {
				f := ls.next()
				if str(f["previousCursor"]) != prev {
					t.Fatalf("gap: page follows %q, last cursor %q", str(f["previousCursor"]), prev)
				}
				var commits []Commit
				_ = json.Unmarshal(f["commits"], &commits)
				if len(commits) > 10 {
					t.Fatalf("page of %d commits, budget 10", len(commits))
				}
				for _, c := range commits {
					if c.Seq != int64(seen+1) {
						t.Fatalf("commit %d, want %d", c.Seq, seen+1)
					}
					seen++
				}
				prev = str(f["cursor"])
				if seen == 25 {
					for i := range 5 {
						se.write(put("task", fmt.Sprint("u", i), `{"project":"alpha"}`))
					}
				}
			}
		})
	}
}

// TestStreamSlowReader: a stream whose client stops reading while many
// commits land loses none of them, and never holds back another stream.
func TestStreamSlowReader(t *testing.T) {
	old := feedTail
	feedTail = 8
	t.Cleanup(func() { feedTail = old })
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			se := newStreamEnv(t, d.open(t), time.Hour)
			se.putView("alpha", alphaView)
			cur := se.cursorNow("alpha")
			slow := se.open("alpha", cur, 0) // not read until the end
			fast := se.open("alpha", cur, 0)
			behind := se.svc.catchUps.Load()
			big := strings.Repeat("x", 4000)
			const n = 150
			var wg sync.WaitGroup
			wg.Go(func() {
				for i := range n {
					se.write(put("task", fmt.Sprintf("t%03d", i), `{"project":"alpha","pad":"`+big+`"}`))
				}
			})
			got := readCommits(t, fast, cur, n)
			wg.Wait()
			if got != n {
				t.Fatalf("fast stream saw %d commits", got)
			}
			if got := readCommits(t, slow, cur, n); got != n {
				t.Fatalf("slow stream saw %d commits", got)
			}
			if se.svc.catchUps.Load() == behind {
				t.Fatal("the slow stream never fell behind the feed's tail")
			}
		})
	}
}

// readCommits reads page frames until n commits arrived, checking that
// they chain and come in seq order; it returns how many it saw.
func readCommits(t *testing.T, ls *liveStream, cur string, n int) int {
	t.Helper()
	seen := 0
	for seen < n {
		f := ls.next()
		if str(f["previousCursor"]) != cur {
			t.Fatalf("gap after %d commits", seen)
		}
		cur = str(f["cursor"])
		var commits []Commit
		_ = json.Unmarshal(f["commits"], &commits)
		for _, c := range commits {
			if c.Seq != int64(seen+1) {
				t.Fatalf("commit %d, want %d", c.Seq, seen+1)
			}
			seen++
		}
	}
	return seen
}

// TestStreamResets: a view change, an epoch rotation or a deleted view
// ends a stream with its terminal frame.
func TestStreamResets(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			se := newStreamEnv(t, d.open(t), time.Hour)
			se.putView("alpha", alphaView)
			steps := []struct {
				change func()
				code   string
				reason Reason
			}{
				{func() {
					se.putView("alpha", `{"version":"v1","types":["task"],"filter":{"fieldEquals":{"field":"project","expected":"beta"}}}`)
				}, problem.ResetRequired, ViewChanged},
				{func() {
					if _, err := se.svc.RotateEpoch(se.ctx, "s"); err != nil {
						t.Fatal(err)
					}
				}, problem.ResetRequired, EpochChanged},
				{func() {
					if err := se.svc.Delete(se.ctx, "s", "alpha"); err != nil {
						t.Fatal(err)
					}
				}, problem.NotFound, ""},
			}
			for i, step := range steps {
				ls := se.open("alpha", se.cursorNow("alpha"), 0)
				// Each step's put differs from the last: an identical put is
				// a no-op that appends nothing, and the stream would wait.
				se.write(put("task", "t", `{"project":"alpha","n":`+strconv.Itoa(i)+`}`))
				ls.next() // a page or progress: the stream runs
				step.change()
				terminal(t, ls.next(), step.code, step.reason)
				ls.ended()
			}
		})
	}
}

func terminal(t *testing.T, f map[string]json.RawMessage, code string, reason Reason) {
	t.Helper()
	var pe problem.Error
	if err := json.Unmarshal(f["error"], &pe); err != nil || len(f) != 1 {
		t.Fatalf("terminal frame %s", mustJSON(t, f))
	}
	if pe.Code != code || (reason != "" && pe.Details["reason"] != string(reason)) {
		t.Fatalf("terminal frame %+v, want %s %s", pe, code, reason)
	}
}

// TestFeedContextOvertaken: a context load that a change overtakes is
// not cached, or the streams checking after the change would be told
// that nothing changed until the next heartbeat.
func TestFeedContextOvertaken(t *testing.T) {
	se := newStreamEnv(t, drivers[0].open(t), time.Hour)
	se.putView("alpha", alphaView)
	d, _, err := se.svc.definition(se.ctx, "s", "alpha")
	if err != nil {
		t.Fatal(err)
	}
	// A feed without streams: nothing else loads contexts meanwhile.
	fd, err := se.svc.feeds.join(se.ctx, "s", se.hub, d)
	if err != nil {
		t.Fatal(err)
	}
	defer se.svc.feeds.leave(fd, d)
	changed := false
	fd.loaded = func() {
		if !changed {
			changed = true
			se.putView("alpha", `{"version":"v2","types":["task"],"filter":{"fieldEquals":{"field":"project","expected":"beta"}}}`)
		}
	}
	if vc := fd.context(se.ctx, "alpha"); vc.err != nil || vc.d.spec.Version != "v1" {
		t.Fatalf("first load: %+v", vc)
	}
	if vc := fd.context(se.ctx, "alpha"); vc.err != nil || vc.d.spec.Version != "v2" {
		t.Fatalf("after the change: version %q, err %v; want v2", vc.d.spec.Version, vc.err)
	}
}

// TestStreamShutdown: a stopping hub ends streams with unavailable.
func TestStreamShutdown(t *testing.T) {
	se := newStreamEnv(t, drivers[0].open(t), time.Hour)
	se.putView("alpha", alphaView)
	ls := se.open("alpha", se.cursorNow("alpha"), 0)
	se.write(put("task", "t", `{"project":"alpha"}`))
	ls.next()
	go func() { _ = se.hub.Stop(context.Background()) }()
	terminal(t, ls.next(), problem.Unavailable, "")
	ls.ended()
}

// TestStreamRefusals: what is wrong before the stream starts is a plain
// problem answer.
func TestStreamRefusals(t *testing.T) {
	se := newStreamEnv(t, drivers[0].open(t), time.Hour)
	se.putView("alpha", alphaView)
	cur := se.cursorNow("alpha")
	for _, tc := range []struct{ url, code string }{
		{"/alpha?cursor=bogus", problem.BadRequest},
		{"/alpha", problem.BadRequest},
		{"/nope?cursor=" + cur, problem.NotFound},
		{"/alpha?budget=100000&cursor=" + cur, problem.BadRequest},
	} {
		res, err := se.srv.Client().Get(se.srv.URL + tc.url)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error problem.Error }
		_ = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		if body.Error.Code != tc.code {
			t.Errorf("%s: %d %+v, want %s", tc.url, res.StatusCode, body.Error, tc.code)
		}
	}
	se.putView("alpha", `{"version":"v2","types":["task"],"filter":{"cel":"true"}}`)
	res, err := se.srv.Client().Get(se.srv.URL + "/alpha?cursor=" + cur)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusConflict {
		t.Fatalf("stale cursor: %d, want 409", res.StatusCode)
	}
}
