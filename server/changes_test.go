package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/storetest"
	"github.com/eddy-run/eddy/watch"
)

const changesPath = "/api/v1/spaces/default/changes"

type changesResult struct {
	Changes []map[string]any `json:"changes"`
	Cursor  *int64           `json:"cursor"`
}

// reset clears c for the next decode and returns it.
func (c *changesResult) reset() *changesResult {
	*c = changesResult{}
	return c
}

func (c changesResult) seqs() []float64 {
	out := []float64{}
	for _, r := range c.Changes {
		out = append(out, r["seq"].(float64))
	}
	return out
}

// seedChanges writes task a (1), note n (2), task b (3), patch task a (4).
func seedChanges(t *testing.T, e *env) {
	t.Helper()
	e.call(t, "PUT", "/api/v1/spaces/default/entities/task/a", map[string]any{"v": 1}).want(http.StatusCreated)
	e.call(t, "PUT", "/api/v1/spaces/default/entities/note/n", map[string]any{"v": 1}).want(http.StatusCreated)
	e.call(t, "PUT", "/api/v1/spaces/default/entities/task/b", map[string]any{"v": 1}).want(http.StatusCreated)
	e.do(t, req{Method: "PATCH", Path: "/api/v1/spaces/default/entities/task/a", Token: e.admin, Body: `{"v": 2}`,
		Header: map[string]string{"Content-Type": "application/merge-patch+json"}}).want(http.StatusOK)
}

func TestChangesForward(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		var c changesResult
		e.call(t, "GET", changesPath, nil).want(http.StatusOK).decode(c.reset())
		if c.Changes == nil || len(c.Changes) != 0 || c.Cursor == nil || *c.Cursor != 0 {
			t.Errorf("empty space = %+v", c)
		}
		seedChanges(t, e)

		r := e.call(t, "GET", changesPath, nil).want(http.StatusOK)
		r.decode(c.reset())
		if !slices.Equal(c.seqs(), []float64{1, 2, 3, 4}) || *c.Cursor != 4 {
			t.Errorf("forward = %s", r.body)
		}
		if k := keys(c.Changes[0]); !slices.Equal(k, []string{"actor", "entityId", "op", "payload", "seq", "ts", "type"}) {
			t.Errorf("row keys = %v", k)
		}
		if c.Changes[0]["actor"] != "owner" {
			t.Errorf("actor = %v", c.Changes[0]["actor"])
		}
		e.call(t, "GET", changesPath+"?from=1&limit=2", nil).want(http.StatusOK).decode(c.reset())
		if !slices.Equal(c.seqs(), []float64{2, 3}) || *c.Cursor != 3 {
			t.Errorf("from=1 limit=2 = %+v", c)
		}
		e.call(t, "GET", changesPath+"?from=0&types=note,user&ops=put", nil).want(http.StatusOK).decode(c.reset())
		if !slices.Equal(c.seqs(), []float64{2}) || *c.Cursor != 4 {
			t.Errorf("filtered = %+v", c)
		}
		e.call(t, "GET", changesPath+"?excludeTypes=note&excludeOps=patch", nil).want(http.StatusOK).decode(c.reset())
		if !slices.Equal(c.seqs(), []float64{1, 3}) {
			t.Errorf("excluded = %+v", c)
		}
		e.call(t, "GET", changesPath+"?entityType=task&entityId=a", nil).want(http.StatusOK).decode(c.reset())
		if !slices.Equal(c.seqs(), []float64{1, 4}) {
			t.Errorf("entity = %+v", c)
		}
		e.call(t, "GET", changesPath+"?from=4", nil).want(http.StatusOK).decode(c.reset())
		if len(c.Changes) != 0 || *c.Cursor != 4 {
			t.Errorf("caught up = %+v", c)
		}

		// Unreadable rows are consumed and dropped.
		limited := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Types: []string{"note"}})
		e.do(t, req{Method: "GET", Path: changesPath + "?from=2", Token: limited}).want(http.StatusOK).decode(c.reset())
		if len(c.Changes) != 0 || *c.Cursor != 4 {
			t.Errorf("limited = %+v", c)
		}
		other := e.token(auth.CreateParams{Space: "elsewhere", Role: auth.RoleReader})
		e.do(t, req{Method: "GET", Path: changesPath, Token: other}).problem(problem.Forbidden)
	})
}

func TestChangesHistory(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		var c changesResult
		r := e.call(t, "GET", changesPath+"?before=0", nil).want(http.StatusOK)
		r.decode(c.reset())
		if len(c.Changes) != 0 || c.Cursor != nil {
			t.Errorf("empty history = %s", r.body)
		}
		seedChanges(t, e)

		e.call(t, "GET", changesPath+"?before=5&limit=2", nil).want(http.StatusOK).decode(c.reset())
		if !slices.Equal(c.seqs(), []float64{4, 3}) || c.Cursor == nil || *c.Cursor != 3 {
			t.Fatalf("history page 1 = %+v", c)
		}
		e.call(t, "GET", changesPath+"?limit=2&before=3", nil).want(http.StatusOK).decode(c.reset())
		if !slices.Equal(c.seqs(), []float64{2, 1}) {
			t.Fatalf("history page 2 = %+v", c)
		}
		if c.Cursor != nil {
			e.call(t, "GET", changesPath+"?limit=2&before=1", nil).want(http.StatusOK).decode(c.reset())
			if len(c.Changes) != 0 || c.Cursor != nil {
				t.Errorf("history end = %+v", c)
			}
		}
		e.call(t, "GET", changesPath+"?before=0&types=note", nil).want(http.StatusOK).decode(c.reset())
		if !slices.Equal(c.seqs(), []float64{2}) || c.Cursor != nil {
			t.Errorf("filtered history = %+v", c)
		}
	})
}

func TestChangesBadRequests(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		seedChanges(t, e)
		tests := []struct {
			query string
			param string
		}{
			{"from=1&before=3", "before"},
			{"from=-1", "from"},
			{"from=x", "from"},
			{"from=", "from"},
			{"from=1.5", "from"},
			{"before=-2", "before"},
			{"from=99", "from"},
			{"before=99", "before"},
			{"limit=0", "limit"},
			{"limit=1001", "limit"},
			{"limit=ten", "limit"},
			{"from=1&from=2", "from"},
			{"watch=yes", "watch"},
			{"watch=1&before=3", "before"},
			{"watch=1&limit=5", "limit"},
			{"watch=1&from=99", "from"},
			{"watch=1&from=-1", "from"},
			{"when=row.type%20%3D%3D", "when"},
			{"when=1&when=2", "when"},
			{"cursor=3", "cursor"},
			{"type=task", "type"},
			{"op=put", "op"},
			{"actor=owner", "actor"},
			{"excludeType=task", "excludeType"},
			{"excludeOp=put", "excludeOp"},
			{"excludeActor=owner", "excludeActor"},
			{"entityId=a", ""},
			{"entityType=task", ""},
			{"types=Task", "types"},
			{"ops=frobnicate", "ops"},
		}
		for _, tt := range tests {
			t.Run(tt.query, func(t *testing.T) {
				p := e.call(t, "GET", changesPath+"?"+tt.query, nil).problem(problem.BadRequest)
				if tt.param != "" && p.Details["parameter"] != tt.param {
					t.Errorf("details = %v, want parameter %s", p.Details, tt.param)
				}
			})
		}
		p := e.call(t, "GET", changesPath+"?type=task", nil).problem(problem.BadRequest)
		if p.Details["suggestion"] != "types" {
			t.Errorf("singular details = %v", p.Details)
		}
		e.call(t, "GET", "/api/v1/spaces/missing/changes", nil).problem(problem.NotFound)
	})
}

// wantSequentialPull pulls the log a commit a page, each page after the
// last one's nextCursor, twice over, as a forwarding consumer does (on
// PostgreSQL the server then reads pages ahead and reuses each page's
// memory once it is sent): the commits must be those of whole, one page
// of them all, byte for byte.
func wantSequentialPull(t *testing.T, e *env, logPath string, whole []byte) {
	t.Helper()
	var all struct {
		Commits []json.RawMessage `json:"commits"`
	}
	if err := json.Unmarshal(whole, &all); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		var got []json.RawMessage
		for after, more := int64(0), true; more; {
			var page struct {
				Commits    []json.RawMessage `json:"commits"`
				NextCursor int64             `json:"nextCursor"`
				HasMore    bool              `json:"hasMore"`
			}
			e.call(t, "GET", fmt.Sprintf("%s?after=%d&limit=1", logPath, after), nil).want(http.StatusOK).decode(&page)
			got = append(got, page.Commits...)
			after, more = page.NextCursor, page.HasMore
		}
		if len(got) != len(all.Commits) {
			t.Fatalf("sequential pull %d: %d commits, want %d", round, len(got), len(all.Commits))
		}
		for i := range got {
			if !bytes.Equal(got[i], all.Commits[i]) {
				t.Fatalf("sequential pull %d, commit %d:\n got %s\nwant %s", round, i, got[i], all.Commits[i])
			}
		}
	}
}

func TestPull(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		seedChanges(t, e)
		logPath := "/api/v1/spaces/default/log"
		var page struct {
			Commits    []map[string]any `json:"commits"`
			NextCursor int64            `json:"nextCursor"`
			HasMore    bool             `json:"hasMore"`
		}
		e.call(t, "GET", logPath+"?after=0&limit=3", nil).want(http.StatusOK).decode(&page)
		if len(page.Commits) != 3 || page.NextCursor != 3 || !page.HasMore {
			t.Fatalf("pull = %+v", page)
		}
		for _, k := range []string{"seq", "changes", "receipt", "provenance"} {
			if _, ok := page.Commits[0][k]; !ok {
				t.Errorf("commit lacks %s: %v", k, page.Commits[0])
			}
		}
		whole := e.call(t, "GET", logPath, nil).want(http.StatusOK)
		whole.decode(&page)
		if len(page.Commits) != 4 || page.NextCursor != 4 || page.HasMore {
			t.Errorf("default pull = %+v", page)
		}
		// Past net/http's 2 KB it would go out chunked, without a size.
		if n := whole.header.Get("Content-Length"); len(whole.body) <= 2048 || n != strconv.Itoa(len(whole.body)) {
			t.Errorf("pull of %d bytes: Content-Length %q", len(whole.body), n)
		}
		wantSequentialPull(t, e, logPath, whole.body)

		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.do(t, req{Method: "GET", Path: logPath, Token: reader}).problem(problem.Forbidden)
		scoped := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Scopes: []string{auth.ScopeLogRead}, Types: []string{"note"}})
		e.do(t, req{Method: "GET", Path: logPath, Token: scoped}).want(http.StatusOK).decode(&page)
		if len(page.Commits) != 1 || page.Commits[0]["type"] != "note" || page.NextCursor != 4 {
			t.Errorf("scoped pull = %+v", page)
		}

		for _, q := range []string{"after=-1", "after=x", "after=99", "limit=0", "limit=1001", "from=1"} {
			e.call(t, "GET", logPath+"?"+q, nil).problem(problem.BadRequest)
		}
		e.call(t, "POST", "/api/v1/spaces/default/prune", map[string]any{"through": 2}).want(http.StatusOK)
		e.call(t, "GET", logPath+"?after=1", nil).problem(problem.Compacted)
		e.call(t, "GET", logPath, nil).want(http.StatusOK).decode(&page)
		if len(page.Commits) != 2 || page.Commits[0]["seq"] != 3.0 {
			t.Errorf("pull after prune = %+v", page)
		}
	})
}

// TestReadsReadTheSpaceOnce checks that a forward read, a pull, a get
// and a list read their space once, for the access policy and their
// cursor or snapshot together (a history page once more, after its
// rows; an admin's pull whose rows answer for its cursor not at all),
// and still judge those against it.
func TestReadsReadTheSpaceOnce(t *testing.T) {
	t.Parallel()
	counted := &storetest.SpaceReads{}
	d := driver{"sqlite", func(t *testing.T) store.Store { t.Helper(); counted.Store = openSQLite(t); return counted }}
	e := newEnvWith(t, d, watch.Options{Heartbeat: testHeartbeat}, nil)
	seedChanges(t, e)
	for _, path := range []string{changesPath + "?from=0", changesPath, changesPath + "?from=4",
		"/api/v1/spaces/default/log", "/api/v1/spaces/default/log?after=4",
		"/api/v1/spaces/default/entities/task/a", "/api/v1/spaces/default/entities/task"} {
		counted.Reset()
		e.call(t, "GET", path, nil).want(http.StatusOK)
		if n := counted.Reads(); n != 1 {
			t.Errorf("GET %s read the space %d times, want 1", path, n)
		}
	}
	// An admin's pull after a cursor its rows answer for (the next commit
	// is there) reads no row of the space; another token's pull reads it
	// once, for its access policy.
	logRead := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Scopes: []string{auth.ScopeLogRead}})
	for _, tc := range []struct {
		token string
		want  int64
	}{{e.admin, 0}, {logRead, 1}} {
		counted.Reset()
		e.do(t, req{Method: "GET", Path: "/api/v1/spaces/default/log?after=0&limit=2", Token: tc.token}).want(http.StatusOK)
		if n := counted.Reads(); n != tc.want {
			t.Errorf("pull after 0 (admin %v) read the space %d times, want %d", tc.token == e.admin, n, tc.want)
		}
	}
	e.call(t, "GET", "/api/v1/spaces/nowhere/log?after=0", nil).problem(problem.NotFound)
	// A list as of an older head and a history page read it again after
	// the rows they read: a prune meanwhile is history_unavailable.
	for _, path := range []string{"/api/v1/spaces/default/entities/task?head=2", changesPath + "?before=0", changesPath + "?before=3&limit=1"} {
		counted.Reset()
		e.call(t, "GET", path, nil).want(http.StatusOK)
		if n := counted.Reads(); n != 2 {
			t.Errorf("GET %s read the space %d times, want 2", path, n)
		}
	}
	e.call(t, "GET", changesPath+"?from=5", nil).problem(problem.BadRequest)
	e.call(t, "GET", "/api/v1/spaces/default/log?after=5", nil).problem(problem.BadRequest)
	e.call(t, "GET", "/api/v1/spaces/default/entities/task?head=5", nil).problem(problem.BadRequest)
	e.call(t, "GET", "/api/v1/spaces/nowhere/entities/task/a", nil).problem(problem.NotFound)
	e.call(t, "POST", "/api/v1/spaces/default/prune", map[string]any{"through": 2}).want(http.StatusOK)
	e.call(t, "GET", changesPath+"?from=1", nil).problem(problem.Compacted)
	e.call(t, "GET", "/api/v1/spaces/default/log?after=1", nil).problem(problem.Compacted)
	e.call(t, "GET", "/api/v1/spaces/default/entities/task?head=1", nil).problem(problem.Compacted)
}
