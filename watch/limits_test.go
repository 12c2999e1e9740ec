package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// get opens a watch with key; it returns the response, open or not.
func (e *env) get(t *testing.T, key string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/s", nil)
	req.Header.Set("X-Key", key)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

func wantRateLimited(t *testing.T, res *http.Response) {
	t.Helper()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"rate_limited"`) {
		t.Fatalf("status %d Retry-After %q body %s; want 429 rate_limited with Retry-After", res.StatusCode, res.Header.Get("Retry-After"), b)
	}
}

// waitWatchers waits until the hub has n open streams.
func waitWatchers(t *testing.T, h *Hub, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for h.Watchers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("watchers = %d, want %d", h.Watchers(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStreamCaps: streams beyond the per-key and the total cap are 429
// rate_limited with Retry-After, watch and ServeFunc streams alike; a
// closed stream frees its place.
func TestStreamCaps(t *testing.T) {
	t.Parallel()
	// A short heartbeat: a closed stream notices at its next write.
	e := newEnv(t, drivers[0].open(t), Options{MaxStreams: 3, MaxStreamsPerKey: 2, Heartbeat: 20 * time.Millisecond})
	a1, a2 := e.get(t, "a"), e.get(t, "a")
	if a1.StatusCode != http.StatusOK || a2.StatusCode != http.StatusOK {
		t.Fatalf("first two streams of a: %d %d", a1.StatusCode, a2.StatusCode)
	}
	wantRateLimited(t, e.get(t, "a"))
	if res := e.get(t, "b"); res.StatusCode != http.StatusOK {
		t.Fatalf("stream of b: %d", res.StatusCode)
	}
	wantRateLimited(t, e.get(t, "c")) // the hub's cap
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	err := e.hub.ServeFunc(rec, req.WithContext(WithKey(req.Context(), "c")), func(context.Context, *Stream) error {
		t.Error("run called beyond the cap")
		return nil
	})
	if problem.CodeOf(err) != problem.RateLimited || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("ServeFunc beyond the cap: %v, Retry-After %q", err, rec.Header().Get("Retry-After"))
	}
	_ = a1.Body.Close()
	waitWatchers(t, e.hub, 2)
	if res := e.get(t, "a"); res.StatusCode != http.StatusOK {
		t.Fatalf("a stream of a after one closed: %d", res.StatusCode)
	}
}

// stallConn dials with a small receive buffer, set before it connects
// (so the window it offers stays small): a consumer that stops reading
// fills it soon.
func stallConn(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = setRecvBuffer(fd, 4096) })
		return errors.Join(err, serr)
	}}
	return d.DialContext(ctx, network, addr)
}

// smallSendBuffers serves e's streams from a listener whose connections
// have a small send buffer, so a client that stops reading stalls the
// server's writes soon.
func smallSendBuffers(e *env) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(e.serve))
	srv.Listener = smallSendListener{srv.Listener}
	srv.Start()
	e.t.Cleanup(srv.Close)
	e.srv = srv
}

type smallSendListener struct{ net.Listener }

func (l smallSendListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// writeBig appends n commits of about size bytes each.
func (e *env) writeBig(n, size int) int64 {
	e.t.Helper()
	pad := strings.Repeat("x", size)
	var head int64
	for n > 0 {
		batch := min(n, 200)
		ms := make([]changelog.Mutation, batch)
		for i := range ms {
			props, _ := json.Marshal(map[string]string{"pad": pad})
			ms[i] = changelog.Mutation{Op: changelog.OpPut, Type: "big", EntityID: fmt.Sprintf("b%d-%d", time.Now().UnixNano(), i), Properties: props}
		}
		res, err := e.log.Write(context.Background(), changelog.WriteRequest{Space: "s", Mutations: ms, Provenance: store.Provenance{Actor: "test", Via: "api"}})
		if err != nil {
			e.t.Fatal(err)
		}
		head, n = res.LastSeq, n-batch
	}
	return head
}

// TestStalledConsumer: a stream whose client stops reading ends after the
// write timeout (it does not hold its rows for ever); a client that was
// only slow reads the terminal slow_consumer frame, and resuming from the
// last seq it read loses nothing.
func TestStalledConsumer(t *testing.T) {
	t.Parallel()
	forEachDriver(t, Options{WriteTimeout: 300 * time.Millisecond, MaxBuffer: 4 << 10}, func(e *env) {
		smallSendBuffers(e)
		c := e.open("from=0", stallConn)
		head := e.writeBig(2000, 10) // ~300 KB of rows: far more than the socket buffers take
		deadline := time.Now().Add(20 * time.Second)
		for e.hub.stalls.Load() == 0 {
			if time.Now().After(deadline) {
				e.t.Fatalf("the stream did not stall (watchers %d, head %d)", e.hub.Watchers(), head)
			}
			time.Sleep(5 * time.Millisecond)
		}
		var last int64
		var end *problem.Error
		for end == nil {
			f, err := c.next()
			if err != nil {
				e.t.Fatalf("stream ended without the terminal frame after seq %d: %v", last, err)
			}
			switch {
			case f.Seq != nil:
				last = *f.Seq
			case f.Bookmark != nil:
				last = *f.Bookmark
			case f.Error != nil:
				end = f.Error
			}
		}
		if end.Code != problem.Unavailable || end.Details["reason"] != "slow_consumer" {
			e.t.Fatalf("terminal frame %+v, want unavailable slow_consumer", end)
		}
		if _, err := c.next(); err == nil {
			e.t.Fatal("the stream went on after its terminal frame")
		}
		if last >= head {
			e.t.Fatalf("read through %d of %d before stalling: the test wrote too little", last, head)
		}
		r := e.open(fmt.Sprintf("from=%d", last), nil)
		next := last + 1
		for next <= head {
			f := r.must()
			if f.Seq == nil {
				continue
			}
			if *f.Seq != next {
				e.t.Fatalf("resumed stream: seq %d, want %d", *f.Seq, next)
			}
			next++
		}
	})
}

// stallResult is what stallMany measured.
type stallResult struct {
	// heldPerStream is the heap in use per stalled stream while all of
	// them were blocked on a client that does not read (when measured).
	heldPerStream int64
	// ended is how long the streams took to end after the first write.
	ended time.Duration
}

// stallMany opens n watch streams (query after "?", e.g. "from=0")
// whose clients never read, and writes rows until every stream has ended
// as stalled, its slot freed. With measure it first waits until nine in
// ten streams are blocked writing to their clients at once and measures
// the heap all of them hold: the hub's WriteTimeout must leave time for
// that.
func stallMany(t *testing.T, e *env, n int, query string, measure bool) stallResult {
	t.Helper()
	smallSendBuffers(e)
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	stalled := e.hub.stalls.Load()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		c, err := stallConn(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatalf("dial stream %d: %v", i, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := io.WriteString(c, "GET /s?"+query+" HTTP/1.1\r\nHost: x\r\nX-Key: k"+strconv.Itoa(i%8)+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	waitWatchers(t, e.hub, n)
	var res stallResult
	start := time.Now()
	deadline := start.Add(5 * time.Minute)
	for measure && e.hub.writing.Load() < int64(n-n/10) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d streams blocked writing", e.hub.writing.Load(), n)
		}
		e.writeBig(20, 200)
	}
	if measure {
		var during runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&during)
		res.heldPerStream = (int64(during.HeapInuse) - int64(before.HeapInuse)) / int64(n)
	}
	for e.hub.Watchers() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d stalled streams still open (stalls %d)", e.hub.Watchers(), n, e.hub.stalls.Load())
		}
		e.writeBig(20, 200)
	}
	res.ended = time.Since(start)
	if got := e.hub.stalls.Load() - stalled; got != int64(n) {
		t.Errorf("%d streams ended as stalled, want %d", got, n)
	}
	return res
}

// TestStalledServeFunc: a ServeFunc stream (a live view stream) whose
// client stops reading ends the same way, with the terminal
// slow_consumer frame for a client that reads again.
func TestStalledServeFunc(t *testing.T) {
	t.Parallel()
	e := newEnv(t, drivers[0].open(t), Options{WriteTimeout: 300 * time.Millisecond})
	line := []byte(`{"n":"` + strings.Repeat("x", 1000) + `"}` + "\n")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = e.hub.ServeFunc(w, r, func(ctx context.Context, s *Stream) error {
			for {
				if err := s.Write(line); err != nil {
					return err
				}
			}
		})
	}))
	srv.Listener = smallSendListener{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	e.srv = srv
	c := e.open("", stallConn)
	deadline := time.Now().Add(20 * time.Second)
	for e.hub.stalls.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stream did not stall")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for {
		b, err := c.br.ReadBytes('\n')
		if err != nil {
			t.Fatalf("stream ended without the terminal frame: %v", err)
		}
		if strings.HasPrefix(string(b), `{"n":`) {
			continue
		}
		if !strings.Contains(string(b), `"slow_consumer"`) {
			t.Fatalf("terminal line %q, want slow_consumer", b)
		}
		break
	}
	waitWatchers(t, e.hub, 0)
}
