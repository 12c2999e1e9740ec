package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/internal/polltest"
)

// fakeWatch is a scripted watch endpoint: the n-th request to
// .../changes or .../entities/{type} is answered by steps[n]; requests
// past the script are forbidden (which ends a watch).
type fakeWatch struct {
	t     *testing.T
	steps []http.HandlerFunc
	head  int64

	mu    sync.Mutex
	paths []string
	reqs  []url.Values
}

// newFakeWatch serves steps and returns the server's URL.
func newFakeWatch(t *testing.T, head int64, steps ...http.HandlerFunc) (*fakeWatch, string) {
	t.Helper()
	f := &fakeWatch{t: t, steps: steps, head: head}
	hs := httptest.NewServer(f)
	t.Cleanup(hs.Close)
	return f, hs.URL
}

func (f *fakeWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer tok" {
		writeProblem(w, http.StatusUnauthorized, `{"code":"unauthorized","message":"bad token"}`)
		return
	}
	if r.URL.Path == "/api/v1/spaces/default" {
		fmt.Fprintf(w, `{"id":"default","head":%d,"horizon":0,"epoch":"e"}`, f.head)
		return
	}
	f.mu.Lock()
	n := len(f.reqs)
	f.paths = append(f.paths, r.URL.Path)
	f.reqs = append(f.reqs, r.URL.Query())
	f.mu.Unlock()
	if n >= len(f.steps) {
		writeProblem(w, http.StatusForbidden, `{"code":"forbidden","message":"script ended"}`)
		return
	}
	f.steps[n](w, r)
}

// requests returns the queries received so far.
func (f *fakeWatch) requests() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]url.Values(nil), f.reqs...)
}

// writeProblem answers a problem object.
func writeProblem(w http.ResponseWriter, status int, pe string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":%s}`, pe)
}

// frames answers a stream of lines and ends it (EOF).
func frames(lines ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		for _, l := range lines {
			fmt.Fprintln(w, l)
			w.(http.Flusher).Flush()
		}
	}
}

// holding answers lines, then keeps the stream open until the client
// leaves.
func holding(lines ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		frames(lines...)(w, r)
		<-r.Context().Done()
	}
}

// answer answers one status and problem.
func answer(status int, pe string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeProblem(w, status, pe) }
}

// Rows of the scripted streams.
const (
	row4190 = `{"seq":4190,"ts":"2026-08-04T10:00:00.183742Z","actor":"owner","op":"put","entityId":"kq3v9x2m41pf","type":"task","payload":{"created":true,"properties":["title","dueAt"]}}`
	row4193 = `{"seq":4193,"ts":"2026-08-04T10:00:01.5Z","actor":"engine","op":"delete","entityId":"a1","type":"task","payload":{"deleted":true}}`
	row4194 = `{"seq":4194,"ts":"2026-08-04T10:00:02Z","actor":"owner","op":"patch","entityId":"a2","type":"task","payload":{"properties":["status"],"state":{"status":"done"}}}`
)

// runWatch runs eddy with the fake server's URL and token and args.
func runWatch(ctx context.Context, base string, stdout, stderr *syncBuffer, args ...string) int {
	a := &app{stdout: stdout, stderr: stderr, stdin: strings.NewReader(""), getenv: hermeticEnv(nil)}
	return a.run(ctx, append([]string{"--server", base, "--token", "tok"}, args...))
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent
// readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until cond holds, failing the test after 15s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	polltest.Within(t, 15*time.Second, what, cond)
}

// resumeScript opens at 4189, sends a row, a heartbeat and a progress
// bookmark, and drops; the resumed stream sends two rows and the terminal
// unavailable frame; the next open is compacted.
func resumeScript() []http.HandlerFunc {
	return []http.HandlerFunc{
		frames(`{"bookmark":4189}`, row4190, `{}`, `{"bookmark":4192}`),
		frames(`{"bookmark":4192}`, row4193, row4194, `{"error":{"code":"unavailable","message":"server shutting down"}}`),
		answer(http.StatusGone, `{"code":"compacted","message":"below the horizon","details":{"horizon":5000}}`),
	}
}

func TestWatchResumesThenCompacted(t *testing.T) {
	t.Parallel()
	f, base := newFakeWatch(t, 6000, resumeScript()...)
	var stdout, stderr syncBuffer
	code := runWatch(context.Background(), base, &stdout, &stderr,
		"watch", "--types", "task", "--ops", "put,delete", "--when", `row.actor != "x"`, "--entity", "task/a1")
	if code != exitError {
		t.Fatalf("exit %d, want %d; stderr: %s", code, exitError, stderr.String())
	}

	// Each open resumes from the last row or bookmark seen, with the same
	// filters.
	reqs := f.requests()
	wantFrom := []string{"", "4192", "4194"}
	if len(reqs) != len(wantFrom) {
		t.Fatalf("%d requests, want %d: %v", len(reqs), len(wantFrom), reqs)
	}
	for i, q := range reqs {
		if got := q.Get("from"); got != wantFrom[i] {
			t.Errorf("request %d from = %q, want %q", i, got, wantFrom[i])
		}
		// Lists go as repeats (the API takes repeats or comma lists).
		if q.Get("watch") != "1" || q.Get("types") != "task" || strings.Join(q["ops"], ",") != "put,delete" ||
			q.Get("when") != `row.actor != "x"` || q.Get("entityType") != "task" || q.Get("entityId") != "a1" {
			t.Errorf("request %d query = %v", i, q)
		}
	}

	want := "4190  10:00:00.183  owner  put     task/kq3v9x2m41pf  created properties=dueAt,title\n" +
		"4193  10:00:01.500  engine  delete  task/a1  deleted\n" +
		"4194  10:00:02.000  owner   patch   task/a2  properties=status state={\"status\":\"done\"}\n"
	if got := stdout.String(); got != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", got, want)
	}
	for _, s := range []string{
		"eddy: connection lost (stream ended); resuming from 4192\n",
		"eddy: resumed from 4192\n",
		"eddy: connection lost (unavailable: server shutting down); resuming from 4194\n",
		"error: compacted: the watch cannot resume from 4194: history starts after 5000 (the horizon); re-list",
		"eddy watch --from 6000",
		`details: {"horizon":5000}`,
	} {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
		}
	}
}

func TestWatchJSONPassthrough(t *testing.T) {
	t.Parallel()
	f, base := newFakeWatch(t, 6000, resumeScript()...)
	var stdout, stderr syncBuffer
	if code := runWatch(context.Background(), base, &stdout, &stderr, "watch", "--json", "--from", "4189", "--type", "task"); code != exitError {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	// Every line arrives unchanged, control frames included.
	want := strings.Join([]string{
		`{"bookmark":4189}`, row4190, `{}`, `{"bookmark":4192}`,
		`{"bookmark":4192}`, row4193, row4194, `{"error":{"code":"unavailable","message":"server shutting down"}}`,
	}, "\n") + "\n"
	if got := stdout.String(); got != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", got, want)
	}
	reqs := f.requests()
	if len(reqs) != 3 || reqs[0].Get("from") != "4189" {
		t.Fatalf("requests = %v", reqs)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.paths {
		if p != "/api/v1/spaces/default/entities/task" {
			t.Errorf("--type watched %s", p)
		}
	}
}

func TestWatchSkipsRowsSeenBeforeResume(t *testing.T) {
	t.Parallel()
	_, base := newFakeWatch(t, 0,
		frames(`{"bookmark":4189}`, row4190),
		// A server that replays from an older position: nothing is
		// printed twice.
		frames(`{"bookmark":4189}`, row4190, row4193),
	)
	var stdout, stderr syncBuffer
	if code := runWatch(context.Background(), base, &stdout, &stderr, "watch", "--json"); code != exitError {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	if got := strings.Count(stdout.String(), `"seq":4190`); got != 1 {
		t.Fatalf("row 4190 printed %d times:\n%s", got, stdout.String())
	}
	if !strings.Contains(stdout.String(), `"seq":4193`) {
		t.Fatalf("row 4193 missing:\n%s", stdout.String())
	}
}

func TestWatchFailsFastBeforeTheFirstStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		step   http.HandlerFunc
		args   []string
		code   int
		stderr string
	}{
		{"compacted", answer(http.StatusGone, `{"code":"compacted","message":"below","details":{"horizon":7}}`),
			[]string{"--from", "3"}, exitError, "error: compacted: the watch cannot resume from 3: history starts after 7"},
		{"bad request", answer(http.StatusBadRequest, `{"code":"bad_request","message":"from: above the head"}`),
			[]string{"--from", "9"}, exitError, "error: bad_request: from: above the head"},
		{"unavailable", answer(http.StatusServiceUnavailable, `{"code":"unavailable","message":"starting"}`),
			nil, exitError, "error: unavailable: starting"},
		{"negative from", nil, []string{"--from", "-1"}, exitUsage, "--from must not be negative"},
		{"bad entity", nil, []string{"--entity", "x"}, exitUsage, "want TYPE/ID"},
		{"type and types", nil, []string{"--type", "a", "--types", "b"}, exitUsage, "--types does not combine with --type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var steps []http.HandlerFunc
			if tt.step != nil {
				steps = append(steps, tt.step)
			}
			f, base := newFakeWatch(t, 10, steps...)
			var stdout, stderr syncBuffer
			code := runWatch(context.Background(), base, &stdout, &stderr, append([]string{"watch"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tt.code, tt.stderr)
			}
			if n := len(f.requests()); n != len(steps) {
				t.Fatalf("%d watch requests, want %d", n, len(steps))
			}
		})
	}
}

func TestWatchUnreachable(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.NotFoundHandler())
	base := hs.URL
	hs.Close()
	var stdout, stderr syncBuffer
	if code := runWatch(context.Background(), base, &stdout, &stderr, "watch"); code != exitError {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "connect") {
		t.Fatalf("stderr %q", stderr.String())
	}
}

func TestWatchInterrupt(t *testing.T) {
	t.Parallel()
	_, base := newFakeWatch(t, 0, holding(`{"bookmark":4189}`, row4190))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	codes := make(chan int, 1)
	go func() { codes <- runWatch(ctx, base, &stdout, &stderr, "watch") }()
	waitFor(t, "row 4190", func() bool { return strings.Contains(stdout.String(), "4190") })
	cancel()
	select {
	case code := <-codes:
		if code != exitOK || stderr.String() != "" {
			t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not end on interrupt")
	}
}

func TestWatchIdleTimeout(t *testing.T) {
	t.Parallel()
	f, base := newFakeWatch(t, 0,
		holding(`{"bookmark":4189}`, row4190),
		holding(`{"bookmark":4190}`, `{}`),
		answer(http.StatusUnauthorized, `{"code":"unauthorized","message":"revoked"}`),
	)
	var stdout, stderr syncBuffer
	code := runWatch(context.Background(), base, &stdout, &stderr, "watch", "--idle-timeout", "150ms")
	if code != exitError {
		t.Fatalf("exit %d; stderr %s", code, stderr.String())
	}
	if got := f.requests(); len(got) != 3 || got[1].Get("from") != "4190" || got[2].Get("from") != "4190" {
		t.Fatalf("requests = %v", got)
	}
	for _, s := range []string{
		"eddy: connection lost (no data from the server for 150ms); resuming from 4190",
		"error: unauthorized: revoked",
	} {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
		}
	}
}

func TestFinal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{client.ErrStreamEnded, false},
		{fmt.Errorf("read: %w", context.DeadlineExceeded), false},
		{&client.Error{Status: 503, Code: "unavailable", Message: "x"}, false},
		{&client.Error{Status: 500, Code: "internal", Message: "x"}, false},
		{&client.Error{Status: 429, Code: "rate_limited", Message: "x"}, false},
		{&client.Error{Status: 502, Code: "http_502", Message: "bad gateway"}, false},
		{&client.Error{Status: 404, Code: "http_404", Message: "nope"}, true},
		{&client.Error{Status: 403, Code: "forbidden", Message: "x"}, true},
		{&compactedError{}, true},
	}
	for _, tt := range tests {
		if got := final(tt.err); got != tt.want {
			t.Errorf("final(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		payload, want string
	}{
		{`{"created":true,"properties":["title","dueAt"]}`, "created properties=dueAt,title"},
		{`{"created":false,"properties":["a"]}`, "properties=a"},
		{`{"deleted":true}`, "deleted"},
		{`{"rel":"assignee","target":{"id":"u1","type":"user"}}`, `rel=assignee target={"id":"u1","type":"user"}`},
		{`{"n":1.5,"x":null}`, "n=1.5 x=null"},
		{`[1, 2]`, "[1,2]"},
		{`null`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		if got := summarize(json.RawMessage(tt.payload)); got != tt.want {
			t.Errorf("summarize(%s) = %q, want %q", tt.payload, got, tt.want)
		}
	}
}

func TestLiveViewColour(t *testing.T) {
	t.Parallel()
	var r row
	if err := json.Unmarshal([]byte(row4193), &r); err != nil {
		t.Fatal(err)
	}
	v := &liveView{color: true}
	got := v.line(r)
	want := "\x1b[33m4193\x1b[0m  \x1b[2m10:00:01.500\x1b[0m  \x1b[36mengine\x1b[0m  \x1b[31mdelete\x1b[0m  \x1b[1mtask/a1\x1b[0m  deleted\n"
	if got != want {
		t.Errorf("line = %q, want %q", got, want)
	}

	// Not a terminal, or NO_COLOR: no colours.
	a := &app{stdout: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	if a.newLiveView().color {
		t.Error("colours on a buffer")
	}
	a = &app{stdout: nil, getenv: func(k string) string { return map[string]string{"NO_COLOR": "1"}[k] }}
	if a.newLiveView().color {
		t.Error("colours with NO_COLOR")
	}
}

// hubServer is a real eddy with its watch hub, served in-process.
type hubServer struct {
	*testServer
	hs *httptest.Server
	e  *eddy.Eddy
	px *cutProxy
}

// newHubServer opens eddy on SQLite with a short heartbeat and serves it
// with watch streams.
func newHubServer(t *testing.T) *hubServer {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	e, err := eddy.Open(ctx, eddy.Config{DataDir: dir, Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("open eddy: %v", err)
	}
	secret, _, err := auth.BootstrapAdmin(ctx, e.Auth(), filepath.Join(dir, tokenFile))
	if err != nil {
		t.Fatalf("bootstrap admin: %v", err)
	}
	cfg := serverConfig(e)
	cfg.Hub, cfg.Logger = e.Hub(), slog.New(slog.DiscardHandler)
	hs := serveAPI(t, cfg)
	t.Cleanup(func() {
		if err := e.Hub().Stop(ctx); err != nil {
			t.Errorf("stop hub: %v", err)
		}
		hs.Close()
		if err := e.Close(); err != nil {
			t.Errorf("close eddy: %v", err)
		}
	})
	px := newCutProxy(t, hs.Listener.Addr().String())
	return &hubServer{testServer: &testServer{url: "http://" + px.addr(), dir: dir, admin: secret}, hs: hs, e: e, px: px}
}

// cut closes every connection to the server, streams included. Streams
// are taken over from net/http by the hub (watch.Takeover), so the server
// no longer tracks them: the cut happens in a proxy in front of it. The
// CLI's own idle keep-alive connections are dropped too, so the next write
// does not race the close.
func (s *hubServer) cut() {
	s.px.cut()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

// cutProxy forwards TCP connections to a server and can sever them all.
type cutProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); p.cut(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			wg.Go(func() { io.Copy(up, c); up.Close() })
			wg.Go(func() { io.Copy(c, up); c.Close() })
		}
	})
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// startWatch runs eddy watch with args in the background; stop cancels it
// and returns its exit code.
func (s *hubServer) startWatch(t *testing.T, args ...string) (stdout, stderr *syncBuffer, stop func() int) {
	t.Helper()
	return startWatchAt(t, s.url, s.dir, args...)
}

// startWatchAt runs eddy watch against the server at base with the admin
// token of dir.
func startWatchAt(t *testing.T, base, dir string, args ...string) (stdout, stderr *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	a := &app{stdout: stdout, stderr: stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	codes := make(chan int, 1)
	go func() {
		codes <- a.run(ctx, append([]string{"--server", base, "--data", dir, "watch"}, args...))
	}()
	var code *int
	stop = func() int {
		if code == nil {
			cancel()
			select {
			case c := <-codes:
				code = &c
			case <-time.After(15 * time.Second):
				t.Fatal("watch did not stop")
			}
		}
		return *code
	}
	t.Cleanup(func() { stop() })
	return stdout, stderr, stop
}

// puts writes task entities ids[i] through the CLI.
func (s *hubServer) puts(t *testing.T, ids ...string) {
	t.Helper()
	for _, id := range ids {
		s.run(t, "put", "task", id, `{"title": "`+id+`"}`).ok(t)
	}
}

// liveSeqs returns the seqs of the live view's lines, in order.
func liveSeqs(t *testing.T, out string) []int64 {
	t.Helper()
	var seqs []int64
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		n, err := strconv.ParseInt(strings.Fields(l)[0], 10, 64)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		seqs = append(seqs, n)
	}
	return seqs
}

// upTo returns 1..n.
func upTo(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// waitSeqs waits until the live view shows exactly want.
func waitSeqs(t *testing.T, out *syncBuffer, want []int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("rows %v", want), func() bool {
		return fmt.Sprint(liveSeqs(t, out.String())) == fmt.Sprint(want)
	})
}

func TestWatchLiveServer(t *testing.T) {
	t.Parallel()
	s := newHubServer(t)
	s.puts(t, "a", "b")
	stdout, stderr, stop := s.startWatch(t, "--from", "0", "--types", "task")
	waitSeqs(t, stdout, upTo(2))
	if !strings.Contains(stdout.String(), "task/a  created properties=title") {
		t.Fatalf("live view:\n%s", stdout.String())
	}

	s.puts(t, "c")
	s.run(t, "put", "note", "n1", `{}`).ok(t) // filtered out: consumed, not shown
	s.puts(t, "d")
	waitSeqs(t, stdout, []int64{1, 2, 3, 5})

	// Cut every connection: the watch resumes where it was and misses
	// nothing written meanwhile.
	s.cut()
	s.puts(t, "e", "f")
	waitSeqs(t, stdout, []int64{1, 2, 3, 5, 6, 7})
	if !strings.Contains(stderr.String(), "eddy: connection lost") || !strings.Contains(stderr.String(), "resuming from 5") {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
	if code := stop(); code != exitOK {
		t.Fatalf("exit %d; stderr %s", code, stderr.String())
	}
}

func TestWatchLiveServerJSON(t *testing.T) {
	t.Parallel()
	s := newHubServer(t)
	s.puts(t, "a", "b")
	stdout, stderr, stop := s.startWatch(t, "--json", "--from", "1")
	waitFor(t, "row 2", func() bool { return strings.Contains(stdout.String(), `"seq":2`) })
	s.cut()
	s.puts(t, "c")
	waitFor(t, "row 3", func() bool { return strings.Contains(stdout.String(), `"seq":3`) })
	if code := stop(); code != exitOK {
		t.Fatalf("exit %d; stderr %s", code, stderr.String())
	}

	// The lines are the server's: the opening bookmarks, then each row
	// once, identical to the rows of a changes page.
	var page struct {
		Changes []json.RawMessage `json:"changes"`
	}
	if err := json.Unmarshal([]byte(s.run(t, "changes", "--from", "1", "--json").ok(t).stdout), &page); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		switch {
		case strings.HasPrefix(l, `{"seq":`):
			rows = append(rows, l)
		case l == `{"bookmark":1}`, l == `{"bookmark":2}`, l == `{}`:
		default:
			t.Errorf("unexpected line %q", l)
		}
	}
	if len(rows) != len(page.Changes) {
		t.Fatalf("rows %v, want %d", rows, len(page.Changes))
	}
	for i, r := range rows {
		if want := string(compact(page.Changes[i])); r != want {
			t.Errorf("row %d = %s, want %s", i, r, want)
		}
	}
	if !strings.HasPrefix(stdout.String(), `{"bookmark":1}`+"\n") {
		t.Errorf("stream did not open with the bookmark: %q", stdout.String())
	}
}

func TestWatchLiveServerCompacted(t *testing.T) {
	t.Parallel()
	s := newHubServer(t)
	s.puts(t, "a", "b", "c")
	s.run(t, "prune", "--through", "2").ok(t)
	r := s.run(t, "watch", "--from", "1")
	r.fails(t, exitError, "error: compacted: the watch cannot resume from 1: history starts after 2 (the horizon)")
	if !strings.Contains(r.stderr, "eddy watch --from 3") || !strings.Contains(r.stderr, `"horizon":2`) {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
}

func TestWatchLiveServerEntities(t *testing.T) {
	t.Parallel()
	s := newHubServer(t)
	s.puts(t, "a")
	s.run(t, "put", "note", "n1", `{}`).ok(t)
	stdout, stderr, stop := s.startWatch(t, "--type", "note", "--from", "0")
	waitSeqs(t, stdout, []int64{2})
	s.run(t, "patch", "note", "n1", `{"x": 1}`).ok(t)
	s.puts(t, "b")
	s.run(t, "delete", "note", "n1").ok(t)
	waitSeqs(t, stdout, []int64{2, 3, 5})
	if code := stop(); code != exitOK {
		t.Fatalf("exit %d; stderr %s", code, stderr.String())
	}
}

func TestServeEndsWatchStreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, _, stopServe := startServe(t, dir, "--heartbeat", "50ms")
	stdout, stderr, stop := startWatchAt(t, base, dir, "--json")

	// The server's --heartbeat reaches the stream.
	waitFor(t, "two heartbeats", func() bool { return strings.Count(stdout.String(), "{}\n") >= 2 })

	// Shutting down ends the stream with the terminal frame at once
	// rather than waiting --shutdown-timeout for it.
	start := time.Now()
	if code := stopServe(); code != exitOK {
		t.Fatalf("serve exit %d", code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v with a watch open", d)
	}
	waitFor(t, "the lost connection", func() bool {
		return strings.Contains(stderr.String(), "eddy: connection lost (unavailable: ")
	})
	if !strings.Contains(stdout.String(), `{"error":{"code":"unavailable"`) {
		t.Fatalf("no terminal frame in:\n%s", stdout.String())
	}
	if code := stop(); code != exitOK {
		t.Fatalf("watch exit %d; stderr %s", code, stderr.String())
	}
}

func TestServeBadHeartbeat(t *testing.T) {
	t.Parallel()
	var stderr strings.Builder
	a := &app{stdout: &bytes.Buffer{}, stderr: &stderr, stdin: strings.NewReader(""), getenv: func(string) string { return "" }}
	if code := a.run(context.Background(), []string{"serve", "--data", t.TempDir(), "--heartbeat", "0s"}); code != exitUsage {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
