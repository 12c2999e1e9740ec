package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

// frameWait bounds how long a test waits for one frame.
const frameWait = 10 * time.Second

// stream is an open watch stream whose lines a goroutine reads.
type stream struct {
	t      *testing.T
	res    *http.Response
	cancel context.CancelFunc
	lines  chan []byte // closed at the end of the body
	stop   chan struct{}
}

// watch opens a watch stream and checks its status and headers.
func (e *env) watch(t *testing.T, path, token string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	hr.Header.Set("Authorization", "Bearer "+token)
	res, err := e.srv.Client().Do(hr)
	if err != nil {
		cancel()
		t.Fatalf("watch %s: %v", path, err)
	}
	if res.StatusCode != http.StatusOK {
		var b bytes.Buffer
		_, _ = b.ReadFrom(res.Body)
		res.Body.Close()
		cancel()
		t.Fatalf("watch %s: status %d: %s", path, res.StatusCode, b.Bytes())
	}
	for h, want := range map[string]string{"Content-Type": "application/x-ndjson", "Cache-Control": "no-store"} {
		if got := res.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	s := &stream{t: t, res: res, cancel: cancel, lines: make(chan []byte, 1024), stop: make(chan struct{})}
	go s.read()
	t.Cleanup(s.close)
	return s
}

func (s *stream) read() {
	defer close(s.lines)
	br := bufio.NewReader(s.res.Body)
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			select {
			case s.lines <- b:
			case <-s.stop:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// close ends the stream from the client side.
func (s *stream) close() {
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	s.cancel()
	s.res.Body.Close()
	for range s.lines { //nolint:revive // drain until the reader ends
	}
}

// line returns the next line, heartbeats included.
func (s *stream) line() string {
	s.t.Helper()
	select {
	case b, ok := <-s.lines:
		if !ok {
			s.t.Fatal("stream ended; want another line")
		}
		return string(b)
	case <-time.After(frameWait):
		s.t.Fatalf("no line within %v", frameWait)
		return ""
	}
}

// frame returns the next line that is not a heartbeat, decoded into a
// short form: "row:N" for a change row, "bookmark:N", or the line itself.
func (s *stream) frame() string {
	s.t.Helper()
	for {
		l := s.line()
		if l == "{}\n" {
			continue
		}
		return short(s.t, l)
	}
}

func short(t *testing.T, l string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(l), &m); err != nil {
		t.Fatalf("line %q: %v", l, err)
	}
	if seq, ok := m["seq"]; ok {
		return fmt.Sprintf("row:%v", seq)
	}
	if bm, ok := m["bookmark"]; ok && len(m) == 1 {
		return fmt.Sprintf("bookmark:%v", bm)
	}
	return strings.TrimSpace(l)
}

// frames reads n frames.
func (s *stream) frames(n int) []string {
	s.t.Helper()
	out := make([]string, n)
	for i := range out {
		out[i] = s.frame()
	}
	return out
}

// ended waits for the server to end the stream.
func (s *stream) ended() {
	s.t.Helper()
	select {
	case b, ok := <-s.lines:
		if ok {
			s.t.Fatalf("line %q; want the end of the stream", b)
		}
	case <-time.After(frameWait):
		s.t.Fatalf("stream still open after %v", frameWait)
	}
}

func (e *env) put(t *testing.T, typ, id string) int64 {
	t.Helper()
	return e.call(t, "PUT", "/api/v1/spaces/default/entities/"+typ+"/"+id, map[string]any{"at": time.Now().UnixNano()}).seq()
}

func TestWatchOpens(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		s := e.watch(t, changesPath+"?watch=1", e.admin)
		if l := s.line(); l != "{\"bookmark\":0}\n" {
			t.Fatalf("first line = %q", l)
		}
		// The row arrives at once (the heartbeat is an hour) and is byte
		// for byte the row forward pages carry.
		e.put(t, "task", "a")
		got := s.line()
		var page struct{ Changes []json.RawMessage }
		e.call(t, "GET", changesPath+"?from=0", nil).want(http.StatusOK).decode(&page)
		if want := string(page.Changes[0]) + "\n"; got != want {
			t.Errorf("row line = %q, want %q", got, want)
		}
		e.put(t, "note", "n")
		e.put(t, "task", "b")
		if got := s.frames(2); !slices.Equal(got, []string{"row:2", "row:3"}) {
			t.Errorf("frames = %v", got)
		}

		from0 := e.watch(t, changesPath+"?watch=1&from=0", e.admin)
		if got := from0.frames(4); !slices.Equal(got, []string{"bookmark:0", "row:1", "row:2", "row:3"}) {
			t.Errorf("from=0 frames = %v", got)
		}
		from2 := e.watch(t, changesPath+"?from=2&watch=true", e.admin)
		if got := from2.frames(2); !slices.Equal(got, []string{"bookmark:2", "row:3"}) {
			t.Errorf("from=2 frames = %v", got)
		}
		head := e.watch(t, changesPath+"?watch=1", e.admin)
		if l := head.line(); l != "{\"bookmark\":3}\n" {
			t.Errorf("at head: first line = %q", l)
		}
		e.put(t, "task", "c")
		for _, st := range []*stream{s, from0, from2, head} {
			if f := st.frame(); f != "row:4" {
				t.Errorf("after a write: frame = %s", f)
			}
		}
	})
}

func TestWatchRefusals(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		for _, id := range []string{"a", "b", "c"} {
			e.put(t, "task", id)
		}
		e.call(t, "POST", "/api/v1/spaces/default/prune", map[string]any{"through": 2}).want(http.StatusOK)
		for _, path := range []string{changesPath + "?watch=1&from=1", "/api/v1/spaces/default/entities/task?watch=1&from=0"} {
			p := e.call(t, "GET", path, nil).problem(problem.Compacted)
			if p.Details["horizon"] != 2.0 {
				t.Errorf("%s: details = %v, want horizon 2", path, p.Details)
			}
		}
		p := e.call(t, "GET", changesPath+"?watch=1&from=4", nil).problem(problem.BadRequest)
		if p.Details["parameter"] != "from" || p.Details["head"] != 3.0 {
			t.Errorf("from above head: details = %v", p.Details)
		}
		e.call(t, "GET", "/api/v1/spaces/missing/changes?watch=1", nil).problem(problem.NotFound)
		if f := e.watch(t, changesPath+"?watch=1&from=2", e.admin).frames(2); !slices.Equal(f, []string{"bookmark:2", "row:3"}) {
			t.Errorf("from the horizon: %v", f)
		}
		for _, path := range []string{changesPath + "?watch=1&when=row.seq%20%3E", changesPath + "?before=0&when=row.seq%20%3E", changesPath + "?when=row.seq%20%3E"} {
			p := e.call(t, "GET", path, nil).problem(problem.BadRequest)
			pos, _ := p.Details["position"].(map[string]any)
			if p.Details["parameter"] != "when" || pos["line"] != 1.0 || pos["column"] == nil {
				t.Errorf("%s: details = %v", path, p.Details)
			}
		}
	})
}

func TestWatchFilters(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		seedChanges(t, e) // task a (1), note n (2), task b (3), patch task a (4)
		tests := []struct {
			query string
			want  []string
			next  string // the frame after a put of note z (5)
		}{
			{"types=task", []string{"row:1", "row:3", "row:4"}, "bookmark:5"},
			{"excludeTypes=task", []string{"row:2", "bookmark:4"}, "row:5"},
			{"ops=patch", []string{"row:4"}, "bookmark:5"},
			{"actors=nobody", []string{"bookmark:4"}, "bookmark:5"},
			{"excludeActors=owner", []string{"bookmark:4"}, "bookmark:5"},
			{"q=note", []string{"row:2", "bookmark:4"}, "row:5"},
			{"entityType=task&entityId=a", []string{"row:1", "row:4"}, "bookmark:5"},
			{"when=" + url.QueryEscape(`row.type == "note"`), []string{"row:2", "bookmark:4"}, "row:5"},
			{"when=" + url.QueryEscape(`row.op == "put" && row.seq > 1`) + "&types=task", []string{"row:3", "bookmark:4"}, "bookmark:5"},
		}
		streams := make([]*stream, len(tests))
		for i, tt := range tests {
			streams[i] = e.watch(t, changesPath+"?watch=1&from=0&"+tt.query, e.admin)
			want := append([]string{"bookmark:0"}, tt.want...)
			if got := streams[i].frames(len(want)); !slices.Equal(got, want) {
				t.Errorf("%s: frames = %v, want %v", tt.query, got, want)
			}
		}
		e.put(t, "note", "z")
		for i, tt := range tests {
			if got := streams[i].frame(); got != tt.next {
				t.Errorf("%s: after a note: %s, want %s", tt.query, got, tt.next)
			}
		}
		// History and forward pages take the same when.
		var c changesResult
		e.call(t, "GET", changesPath+"?from=0&when="+url.QueryEscape(`row.type == "note"`), nil).want(http.StatusOK).decode(c.reset())
		if !slices.Equal(c.seqs(), []float64{2, 5}) {
			t.Errorf("forward with when = %v", c.seqs())
		}
		e.call(t, "GET", changesPath+"?before=0&when="+url.QueryEscape(`row.op == "patch"`), nil).want(http.StatusOK).decode(c.reset())
		if !slices.Equal(c.seqs(), []float64{4}) {
			t.Errorf("history with when = %v", c.seqs())
		}
	})
}

func TestWatchReaderTypes(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		seedChanges(t, e)
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Types: []string{"task"}})
		s := e.watch(t, changesPath+"?watch=1&from=0", reader)
		// A when that would select notes still never shows one.
		notes := e.watch(t, changesPath+"?watch=1&from=0&when="+url.QueryEscape(`row.type == "note"`), reader)
		if got := s.frames(4); !slices.Equal(got, []string{"bookmark:0", "row:1", "row:3", "row:4"}) {
			t.Errorf("reader frames = %v", got)
		}
		if got := notes.frames(2); !slices.Equal(got, []string{"bookmark:0", "bookmark:4"}) {
			t.Errorf("reader with when frames = %v", got)
		}
		e.put(t, "note", "m")
		e.put(t, "task", "c")
		// The note is covered by a bookmark of its own, or by row 6 when
		// both rows reach the stream in one write (coalesced fan-out).
		var got []string
		for len(got) < 2 && !slices.Contains(got, "row:6") {
			got = append(got, s.frame())
		}
		if !slices.Equal(got, []string{"bookmark:5", "row:6"}) && !slices.Equal(got, []string{"row:6"}) {
			t.Errorf("reader live frames = %v", got)
		}
		e.do(t, req{Method: "GET", Path: "/api/v1/spaces/default/entities/note?watch=1", Token: reader}).problem(problem.Forbidden)
		tasks := e.watch(t, "/api/v1/spaces/default/entities/task?watch=1&from=3", reader)
		if got := tasks.frames(3); !slices.Equal(got, []string{"bookmark:3", "row:4", "row:6"}) {
			t.Errorf("entity watch frames = %v", got)
		}
		e.put(t, "note", "m2")
		if got := tasks.frame(); got != "bookmark:7" {
			t.Errorf("entity watch after a note = %v", got)
		}
	})
}

func TestWatchHeartbeat(t *testing.T) {
	t.Parallel()
	const hb = 150 * time.Millisecond
	forEachDriverHeartbeat(t, hb, func(e *env) {
		t := e.t
		s := e.watch(t, changesPath+"?watch=1", e.admin)
		start := time.Now()
		if l := s.line(); l != "{\"bookmark\":0}\n" {
			t.Fatalf("first line = %q", l)
		}
		for range 2 {
			if l := s.line(); l != "{}\n" {
				t.Fatalf("idle line = %q, want the heartbeat", l)
			}
			if el := time.Since(start); el < hb/2 {
				t.Errorf("heartbeat after %v, want about %v", el, hb)
			}
			start = time.Now()
		}
		// A committed row does not wait for the next tick.
		e.put(t, "task", "a")
		if f := s.frame(); f != "row:1" {
			t.Fatalf("frame = %s", f)
		}
	})
}

func TestWatchShutdown(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.put(t, "task", "a")
		caught := e.watch(t, changesPath+"?watch=1", e.admin)
		behind := e.watch(t, "/api/v1/spaces/default/entities/task?watch=1&from=0", e.admin)
		caught.frames(1)
		behind.frames(2)
		stopHub(t, e.hub)
		for _, s := range []*stream{caught, behind} {
			var body struct {
				Error *problem.Error `json:"error"`
			}
			l := s.line()
			if err := json.Unmarshal([]byte(l), &body); err != nil || body.Error == nil || body.Error.Code != problem.Unavailable || body.Error.Message == "" {
				t.Errorf("terminal line = %q", l)
			}
			s.ended()
		}
		e.call(t, "GET", changesPath+"?watch=1", nil).problem(problem.Unavailable)
	})
}

func TestWatchListHandoff(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		base := "/api/v1/spaces/default/entities/task"
		for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
			e.put(t, "task", id)
		}
		seen := map[string]float64{} // id -> version
		var page listResult
		e.call(t, "GET", base+"?limit=2", nil).want(http.StatusOK).decode(&page)
		head := page.Head
		writes := [][2]string{{"task", "c"}, {"note", "x"}, {"task", "a"}, {"task", "g"}, {"task", "e"}}
		for i := 0; ; i++ {
			for _, it := range page.Items {
				seen[it["id"].(string)] = it["version"].(float64)
			}
			if i < len(writes) { // a write lands between pages
				e.put(t, writes[i][0], writes[i][1])
			}
			if page.Next == nil {
				break
			}
			next := *page.Next
			page = listResult{}
			e.call(t, "GET", base+"?limit=2&after="+next, nil).want(http.StatusOK).decode(&page)
		}
		e.call(t, "DELETE", base+"/b", nil).want(http.StatusOK)
		now := e.head(t, "default")

		s := e.watch(t, fmt.Sprintf("%s?watch=1&from=%d", base, head), e.admin)
		if f := s.frame(); f != fmt.Sprintf("bookmark:%d", head) {
			t.Fatalf("first frame = %s", f)
		}
		for pos := head; pos < now; {
			l := s.line()
			var row struct {
				Seq      *int64
				Bookmark *int64
				EntityID string
				Op       string
			}
			if err := json.Unmarshal([]byte(l), &row); err != nil {
				t.Fatal(err)
			}
			switch {
			case row.Seq != nil:
				if *row.Seq <= pos {
					t.Fatalf("row %d after position %d", *row.Seq, pos)
				}
				pos = *row.Seq
				if row.Op == "delete" {
					delete(seen, row.EntityID)
				} else {
					seen[row.EntityID] = float64(pos)
				}
			case row.Bookmark != nil:
				pos = *row.Bookmark
			}
		}
		// The listed snapshot plus the watched changes is the current state.
		e.call(t, "GET", base+"?limit=1000", nil).want(http.StatusOK).decode(&page)
		want := map[string]float64{}
		for _, it := range page.Items {
			want[it["id"].(string)] = it["version"].(float64)
		}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("list + watch = %v\nwant current %v", seen, want)
		}
	})
}
