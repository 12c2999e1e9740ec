package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// causeToken mints a cause token with the server's key for a delivery of
// trigger in space default, caused by seq, at depth, in the chain of
// root 1.
func (e *env) causeToken(t *testing.T, trigger, delivery string, causedBy int64, depth int) string {
	t.Helper()
	return e.mintCause(t, causality.Claims{
		Space: "default", Trigger: trigger, Delivery: delivery,
		CausedBy: causedBy, Root: 1, Depth: depth, Exp: time.Now().Add(time.Hour).Unix(),
	})
}

func (e *env) mintCause(t *testing.T, c causality.Claims) string {
	t.Helper()
	key, err := causality.Key(context.Background(), e.log.Store())
	if err != nil {
		t.Fatalf("cause key: %v", err)
	}
	tok, err := causality.Mint(key, c)
	if err != nil {
		t.Fatalf("mint: %v", err)
	}
	return tok
}

// causeChain writes a chain of three rows: an API put (seq 1, depth 0),
// a patch made with a token of trigger stamp's delivery d1 caused by it
// (seq 2, depth 1), and a mutations batch made with a token of relay's
// delivery d2 caused by seq 2 (seq 3, depth 2). It returns a writer's
// secret.
func (e *env) causeChain(t *testing.T) string {
	t.Helper()
	writer := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, Actor: "hook"})
	e.call(t, "PUT", "/api/v1/spaces/default/entities/task/t1", map[string]any{"title": "x"}).want(http.StatusCreated)
	r := e.do(t, req{Method: "PATCH", Path: "/api/v1/spaces/default/entities/task/t1", Token: writer,
		Body:   map[string]any{"stamped": true},
		Header: map[string]string{"Content-Type": "application/merge-patch+json", "Eddy-Cause": e.causeToken(t, "stamp", "d1", 1, 1)},
	}).want(http.StatusOK)
	if r.seq() != 2 {
		t.Fatalf("caused patch at seq %d, want 2", r.seq())
	}
	r = e.do(t, req{Method: "POST", Path: "/api/v1/spaces/default/mutations", Token: writer,
		Body:   map[string]any{"mutations": []any{map[string]any{"op": "put", "type": "task", "entityId": "t2", "properties": map[string]any{"from": "relay"}}}},
		Header: map[string]string{"Eddy-Cause": e.causeToken(t, "relay", "d2", 2, 2)},
	}).want(http.StatusOK)
	if r.seq() != 3 {
		t.Fatalf("caused batch at seq %d, want 3", r.seq())
	}
	return writer
}

// causesOf returns the raw chain of seq as the admin sees it.
func (e *env) causesOf(t *testing.T, seq int64) []map[string]any {
	t.Helper()
	var body struct {
		Seq   int64            `json:"seq"`
		Chain []map[string]any `json:"chain"`
	}
	e.call(t, "GET", "/api/v1/spaces/default/changes/"+strconv.FormatInt(seq, 10)+"/causes", nil).want(http.StatusOK).decode(&body)
	if body.Seq != seq {
		t.Fatalf("causes answer seq %d, want %d", body.Seq, seq)
	}
	return body.Chain
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCausesChain(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.causeChain(t)
		tests := []struct {
			seq  int64
			want string
		}{
			{3, `[{"delivery":"d2","depth":2,"seq":3,"trigger":"relay"},{"delivery":"d1","depth":1,"seq":2,"trigger":"stamp"},{"depth":0,"seq":1}]`},
			{2, `[{"delivery":"d1","depth":1,"seq":2,"trigger":"stamp"},{"depth":0,"seq":1}]`},
			{1, `[{"depth":0,"seq":1}]`},
		}
		for _, tt := range tests {
			if got := jsonString(t, e.causesOf(t, tt.seq)); got != tt.want {
				t.Errorf("causes of %d = %s\nwant %s", tt.seq, got, tt.want)
			}
		}

		// The commits are delivery-authored: actor and provenance.
		page, err := e.log.Pull(context.Background(), "default", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := []struct {
			actor string
			prov  store.Provenance
		}{
			{"owner", store.Provenance{Actor: "owner", Via: "api"}},
			{"trigger:stamp", store.Provenance{Actor: "trigger:stamp", Via: "trigger", Trigger: "stamp", Delivery: "d1", CausedBy: 1, Root: 1, Depth: 1}},
			{"trigger:relay", store.Provenance{Actor: "trigger:relay", Via: "trigger", Trigger: "relay", Delivery: "d2", CausedBy: 2, Root: 1, Depth: 2}},
		}
		if len(page.Commits) != len(want) {
			t.Fatalf("pulled %d commits, want %d", len(page.Commits), len(want))
		}
		for i, c := range page.Commits {
			got := c.Provenance
			if got.RequestID == "" {
				t.Errorf("seq %d: no request id", c.Seq)
			}
			got.RequestID = ""
			if c.Actor != want[i].actor || got != want[i].prov {
				t.Errorf("seq %d: actor %q provenance %+v; want %q %+v", c.Seq, c.Actor, got, want[i].actor, want[i].prov)
			}
		}
	})
}

// The causes answer shows both limits: the root the row counts against,
// the rows it has caused so far, and the space's depth cap and causal
// budget. A token minted without a root counts against its cause.
func TestCausesBudget(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		writer := e.causeChain(t)
		type answer struct {
			Root     int64 `json:"root"`
			RootRows int64 `json:"rootRows"`
			Cap      int   `json:"cap"`
			Budget   int   `json:"budget"`
		}
		get := func(seq int64) answer {
			var a answer
			e.call(t, "GET", "/api/v1/spaces/default/changes/"+strconv.FormatInt(seq, 10)+"/causes", nil).want(http.StatusOK).decode(&a)
			return a
		}
		want := answer{Root: 1, RootRows: 2, Cap: causality.DefaultCap, Budget: causality.DefaultBudget}
		for _, seq := range []int64{1, 2, 3} {
			if got := get(seq); got != want {
				t.Errorf("causes of %d: %+v, want %+v", seq, got, want)
			}
		}
		old := e.mintCause(t, causality.Claims{Space: "default", Trigger: "relay", Delivery: "d3", CausedBy: 3, Depth: 3,
			Exp: time.Now().Add(time.Hour).Unix()})
		e.do(t, req{Method: "PUT", Path: "/api/v1/spaces/default/entities/task/t3", Token: writer,
			Body: map[string]any{"n": 1}, Header: map[string]string{"Eddy-Cause": old}}).want(http.StatusCreated)
		if got, want := get(4), (answer{Root: 3, RootRows: 1, Cap: causality.DefaultCap, Budget: causality.DefaultBudget}); got != want {
			t.Errorf("causes of a write with a rootless token: %+v, want %+v", got, want)
		}
	})
}

// wireKeys are the only keys a wire row has.
var wireKeys = []string{"actor", "entityId", "op", "payload", "seq", "ts", "type"}

func TestCausesWireRowsUnchanged(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		s := e.watch(t, "/api/v1/spaces/default/changes?watch=1&from=0", e.admin)
		if got := s.frame(); got != "bookmark:0" {
			t.Fatalf("first frame = %s", got)
		}
		e.causeChain(t)

		var rows []map[string]any
		for range 3 {
			var m map[string]any
			if err := json.Unmarshal([]byte(s.line()), &m); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, m)
		}
		var page struct {
			Changes []map[string]any `json:"changes"`
		}
		e.call(t, "GET", "/api/v1/spaces/default/changes?from=0", nil).want(http.StatusOK).decode(&page)
		rows = append(rows, page.Changes...)
		e.call(t, "GET", "/api/v1/spaces/default/changes?before=4", nil).want(http.StatusOK).decode(&page)
		rows = append(rows, page.Changes...)
		if len(rows) != 9 {
			t.Fatalf("read %d rows, want 9 (watch, forward, history)", len(rows))
		}
		for _, r := range rows {
			if got := keys(r); !slices.Equal(got, wireKeys) {
				t.Errorf("row %v has keys %v, want %v", r["seq"], got, wireKeys)
			}
			if r["seq"] != 1.0 && r["actor"] != "trigger:stamp" && r["actor"] != "trigger:relay" {
				t.Errorf("row %v actor %v, want a trigger actor", r["seq"], r["actor"])
			}
		}
	})
}

func TestCauseTokenRefused(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		ctx := context.Background()
		e.call(t, "PUT", "/api/v1/spaces/default/entities/task/t1", map[string]any{"n": 0}).want(http.StatusCreated)
		e.call(t, "PUT", "/api/v1/spaces/other", nil).want(http.StatusCreated)
		writer := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter})
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		notes := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, Types: []string{"note"}})
		trig := store.Definition{Name: "low", Def: json.RawMessage(`{"name":"low","function":"f","causalityCap":2}`)}
		if _, err := e.log.Store().DefinitionPut(ctx, "default", store.DefTrigger, trig); err != nil {
			t.Fatal(err)
		}
		expired := causality.Claims{Space: "default", Trigger: "t", Delivery: "d", CausedBy: 1, Depth: 1, Exp: time.Now().Add(-time.Minute).Unix()}
		otherKey, err := causality.Mint([]byte("not the server key, but as long.."), causality.Claims{Space: "default", Trigger: "t", Delivery: "d", CausedBy: 1, Depth: 1, Exp: time.Now().Add(time.Hour).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		otherSpace := e.mintCause(t, causality.Claims{Space: "other", Trigger: "t", Delivery: "d", CausedBy: 1, Depth: 1, Exp: time.Now().Add(time.Hour).Unix()})

		tests := []struct {
			name, token, cause, code, reason string
			cap                              float64
		}{
			{"garbage", writer, "not-a-token", problem.Unauthorized, "", 0},
			{"expired", writer, e.mintCause(t, expired), problem.Unauthorized, "", 0},
			{"another key", writer, otherKey, problem.Unauthorized, "", 0},
			{"cause ahead of head", writer, e.causeToken(t, "t", "d", 99, 1), problem.Unauthorized, "", 0},
			{"another space", writer, otherSpace, problem.Forbidden, "", 0},
			{"reader", reader, e.causeToken(t, "t", "d", 1, 1), problem.Forbidden, "", 0},
			{"type not allowed", notes, e.causeToken(t, "t", "d", 1, 1), problem.Forbidden, "", 0},
			{"past the space cap", writer, e.causeToken(t, "t", "d", 1, causality.DefaultCap+1), problem.Conflict, reasonCausalityCap, causality.DefaultCap},
			{"past the trigger cap", writer, e.causeToken(t, "low", "d", 1, 3), problem.Conflict, reasonCausalityCap, 2},
		}
		for _, tt := range tests {
			for _, r := range []req{
				{Method: "PUT", Path: "/api/v1/spaces/default/entities/task/t1", Body: map[string]any{"n": 1}},
				{Method: "POST", Path: "/api/v1/spaces/default/mutations", Body: map[string]any{"mutations": []any{
					map[string]any{"op": "delete", "type": "task", "entityId": "t1"}}}},
			} {
				r.Token, r.Header = tt.token, map[string]string{"Eddy-Cause": tt.cause}
				p := e.do(t, r).problem(tt.code)
				if tt.reason != "" && (p.Details["reason"] != tt.reason || p.Details["cap"] != tt.cap) {
					t.Errorf("%s %s: details = %v, want reason %s cap %v", tt.name, r.Method, p.Details, tt.reason, tt.cap)
				}
			}
			if h := e.head(t, "default"); h != 1 {
				t.Fatalf("%s: head %d after a refused write, want 1", tt.name, h)
			}
		}

		// At the caps the writes happen (the second delete is a no-op).
		for _, tok := range []string{e.causeToken(t, "low", "d", 1, 2), e.causeToken(t, "t", "d", 1, causality.DefaultCap)} {
			e.do(t, req{Method: "DELETE", Path: "/api/v1/spaces/default/entities/task/t1", Token: writer,
				Header: map[string]string{"Eddy-Cause": tok}}).want(http.StatusOK)
			e.do(t, req{Method: "POST", Path: "/api/v1/spaces/default/entities/task", Token: writer, Body: map[string]any{},
				Header: map[string]string{"Eddy-Cause": tok}}).want(http.StatusCreated)
		}
		if h := e.head(t, "default"); h != 4 {
			t.Fatalf("head = %d, want 4", h)
		}
		chain := e.causesOf(t, 4)
		if got := jsonString(t, chain); got != `[{"delivery":"d","depth":16,"seq":4,"trigger":"t"},{"depth":0,"seq":1}]` {
			t.Errorf("causes of 4 = %s", got)
		}
	})
}

func TestCausesRequests(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		e.causeChain(t)
		path := func(seq string) string { return "/api/v1/spaces/default/changes/" + seq + "/causes" }
		for _, seq := range []string{"0", "-1", "x", "4", "99999999999999999999"} {
			e.call(t, "GET", path(seq), nil).problem(problem.BadRequest)
		}
		e.call(t, "GET", path("3")+"?depth=2", nil).problem(problem.BadRequest)
		e.call(t, "GET", "/api/v1/spaces/missing/changes/1/causes", nil).problem(problem.NotFound)

		tokens := []struct {
			name string
			p    auth.CreateParams
			want int
		}{
			{"reader", auth.CreateParams{Space: "default", Role: auth.RoleReader}, http.StatusForbidden},
			{"writer", auth.CreateParams{Space: "default", Role: auth.RoleWriter}, http.StatusForbidden},
			{"other space", auth.CreateParams{Space: "other", Role: auth.RoleAdmin}, http.StatusForbidden},
			{"log reader", auth.CreateParams{Space: "default", Role: auth.RoleReader, Scopes: []string{auth.ScopeLogRead}}, http.StatusOK},
			{"log reader of notes", auth.CreateParams{Space: "default", Role: auth.RoleReader, Scopes: []string{auth.ScopeLogRead}, Types: []string{"note"}}, http.StatusForbidden},
			{"space admin", auth.CreateParams{Space: "default", Role: auth.RoleAdmin}, http.StatusOK},
		}
		for _, tt := range tokens {
			r := e.do(t, req{Method: "GET", Path: path("3"), Token: e.token(tt.p)})
			if r.status != tt.want {
				t.Errorf("%s: status %d, want %d: %s", tt.name, r.status, tt.want, r.body)
			}
		}

		// Prune the root: the chain ends with a pruned marker; a pruned
		// row itself is compacted.
		e.call(t, "POST", "/api/v1/spaces/default/prune", map[string]any{"through": 1}).want(http.StatusOK)
		if got := jsonString(t, e.causesOf(t, 3)); got != `[{"delivery":"d2","depth":2,"seq":3,"trigger":"relay"},{"delivery":"d1","depth":1,"seq":2,"trigger":"stamp"},{"pruned":true,"seq":1}]` {
			t.Errorf("causes of 3 after pruning 1 = %s", got)
		}
		e.call(t, "POST", "/api/v1/spaces/default/prune", map[string]any{"through": 2}).want(http.StatusOK)
		if got := jsonString(t, e.causesOf(t, 3)); got != `[{"delivery":"d2","depth":2,"seq":3,"trigger":"relay"},{"pruned":true,"seq":2}]` {
			t.Errorf("causes of 3 after pruning 2 = %s", got)
		}
		for _, seq := range []string{"1", "2"} {
			p := e.call(t, "GET", path(seq), nil).problem(problem.Compacted)
			if p.Details["horizon"] != 2.0 {
				t.Errorf("compacted details = %v", p.Details)
			}
		}
	})
}
