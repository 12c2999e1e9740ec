package server

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

const pushPath = "/api/v1/spaces/default/push"

// pushOf returns a push body of puts of task/<id> at the ordinals.
func pushOf(client string, ordinals ...int64) map[string]any {
	ms := []any{}
	for _, o := range ordinals {
		ms = append(ms, map[string]any{"ordinal": o, "op": "put", "type": "task", "entityId": fmt.Sprintf("%s-%d", client, o),
			"properties": map[string]any{"n": o}})
	}
	return map[string]any{"clientId": client, "mutations": ms}
}

type pushResult struct {
	ClientID    string           `json:"clientId"`
	LastOrdinal int64            `json:"lastOrdinal"`
	Receipts    []map[string]any `json:"receipts"`
}

func (e *env) push(t *testing.T, token string, body any) *resp {
	t.Helper()
	if token == "" {
		token = e.admin
	}
	return e.do(t, req{Method: "POST", Path: pushPath, Token: token, Body: body})
}

func TestPushOrderReplayAndGap(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		var res pushResult
		r := e.push(t, "", pushOf("c1", 1, 2)).want(http.StatusOK)
		r.decode(&res)
		if res.ClientID != "c1" || res.LastOrdinal != 2 || len(res.Receipts) != 2 || res.Receipts[1]["mutationId"] != "c1:2" ||
			res.Receipts[0]["status"] != "applied" || r.seq() != 2 {
			t.Fatalf("push = %s (seq %d)", r.body, r.seq())
		}
		// A replay answers the stored receipts and appends nothing.
		r = e.push(t, "", pushOf("c1", 1, 2)).want(http.StatusOK)
		var again pushResult
		r.decode(&again)
		if again.LastOrdinal != 2 || again.Receipts[0]["seq"] != res.Receipts[0]["seq"] || e.head(t, "default") != 2 || r.seq() != 2 {
			t.Fatalf("replay = %s", r.body)
		}
		// A gap consumes nothing.
		pe := e.push(t, "", pushOf("c1", 5)).want(http.StatusConflict).problem(problem.MutationGap)
		if pe.Details["expected"] != float64(3) || pe.Details["got"] != float64(5) || e.head(t, "default") != 2 {
			t.Fatalf("gap = %+v", pe)
		}
		// A mixed batch runs up to the first gap: 2 replays, 3 admitted.
		pe = e.push(t, "", pushOf("c1", 2, 3, 5)).want(http.StatusConflict).problem(problem.MutationGap)
		if pe.Details["expected"] != float64(4) || pe.Details["lastOrdinal"] != float64(3) || len(pe.Details["receipts"].([]any)) != 2 || e.head(t, "default") != 3 {
			t.Fatalf("mixed = %+v", pe)
		}
		var c map[string]any
		e.call(t, "GET", "/api/v1/spaces/default/clients/c1", nil).want(http.StatusOK).decode(&c)
		if c["clientId"] != "c1" || c["lastOrdinal"] != float64(3) || c["updatedAt"] == nil {
			t.Fatalf("client = %v", c)
		}
		e.call(t, "GET", "/api/v1/spaces/default/clients/nope", nil).want(http.StatusNotFound)
		// A new client must start at 1.
		e.push(t, "", pushOf("c2", 2)).want(http.StatusConflict).problem(problem.MutationGap)
	})
}

func TestPushRejectionAdvancesTheOrdinal(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		body := map[string]any{"clientId": "c1", "mutations": []any{
			map[string]any{"ordinal": 1, "op": "put", "type": "task", "entityId": "t1", "properties": map[string]any{}},
			map[string]any{"ordinal": 2, "op": "patch", "type": "task", "entityId": "t1", "patch": map[string]any{"x": 1}, "ifVersion": 7},
			map[string]any{"ordinal": 3, "op": "patch", "type": "task", "entityId": "t1", "patch": map[string]any{"x": 2}},
		}}
		var res pushResult
		e.push(t, "", body).want(http.StatusOK).decode(&res)
		if res.LastOrdinal != 3 || res.Receipts[1]["status"] != "rejected" || res.Receipts[2]["status"] != "applied" || e.head(t, "default") != 2 {
			t.Fatalf("push = %+v", res)
		}
		var again pushResult
		e.push(t, "", map[string]any{"clientId": "c1", "mutations": body["mutations"].([]any)[1:2]}).want(http.StatusOK).decode(&again)
		if again.Receipts[0]["status"] != "rejected" || again.Receipts[0]["mutationId"] != "c1:2" {
			t.Fatalf("replayed rejection = %+v", again)
		}
	})
}

func TestPushClientBelongsToItsFirstPrincipal(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		w1 := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, Actor: "w1"})
		w2 := e.token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, Actor: "w2"})
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Actor: "r"})
		e.push(t, w1, pushOf("c1", 1)).want(http.StatusOK)
		e.push(t, w2, pushOf("c1", 2)).want(http.StatusForbidden).problem(problem.Forbidden)
		e.push(t, w2, pushOf("c1", 1)).want(http.StatusForbidden)
		e.push(t, reader, pushOf("c9", 1)).want(http.StatusForbidden)
		e.do(t, req{Method: "GET", Path: "/api/v1/spaces/default/clients/c1", Token: w2}).want(http.StatusForbidden)
		e.do(t, req{Method: "GET", Path: "/api/v1/spaces/default/clients/c1", Token: w1}).want(http.StatusOK)
		if e.head(t, "default") != 1 {
			t.Fatal("a foreign push appended")
		}
	})
}

func TestPushBadInput(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		cases := map[string]any{
			"no client id":   map[string]any{"mutations": pushOf("x", 1)["mutations"]},
			"empty id":       pushOf("", 1),
			"spaced id":      pushOf("a b", 1),
			"ordinal 0":      pushOf("c1", 0),
			"negative":       pushOf("c1", -3),
			"no ordinal":     map[string]any{"clientId": "c1", "mutations": []any{map[string]any{"op": "put", "type": "task", "entityId": "t", "properties": map[string]any{}}}},
			"mutation id":    map[string]any{"clientId": "c1", "mutations": []any{map[string]any{"ordinal": 1, "mutationId": "m", "op": "put", "type": "task", "entityId": "t", "properties": map[string]any{}}}},
			"no mutations":   map[string]any{"clientId": "c1", "mutations": []any{}},
			"unknown field":  map[string]any{"clientId": "c1", "atomic": true, "mutations": pushOf("c1", 1)["mutations"]},
			"bad mutation":   map[string]any{"clientId": "c1", "mutations": []any{map[string]any{"ordinal": 1, "op": "fly", "type": "task", "entityId": "t"}}},
			"truncated":      `{"clientId": "c1", "mutations": [{"ordinal": 1, "op": "put"`,
			"not json":       `clientId=c1`,
			"trailing":       `{"clientId": "c1", "mutations": [{"ordinal": 1, "op": "put", "type": "task", "entityId": "t", "properties": {}}]} {}`,
			"ordinal string": `{"clientId": "c1", "mutations": [{"ordinal": "1", "op": "put", "type": "task", "entityId": "t", "properties": {}}]}`,
		}
		for name, body := range cases {
			r := e.push(t, "", body)
			if r.status != http.StatusBadRequest {
				t.Errorf("%s: status %d: %s", name, r.status, r.body)
			}
		}
		if e.head(t, "default") != 0 {
			t.Fatal("bad input appended")
		}
		e.call(t, "GET", "/api/v1/spaces/default/clients/c1", nil).want(http.StatusNotFound)
		e.call(t, "POST", pushPath+"?x=1", pushOf("c1", 1)).want(http.StatusBadRequest)
	})
}

func TestConcurrentPushesFromManyClients(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		t := e.t
		const clients, rounds = 8, 6
		var wg sync.WaitGroup
		errs := make(chan error, clients*rounds*2)
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("c%d", c)
				for o := int64(1); o <= rounds; o++ {
					// Every push is sent twice at once, the way a client
					// retrying a lost answer races its first attempt: both
					// answer the one receipt of the one commit.
					var seqs [2]any
					var pair sync.WaitGroup
					for k := range 2 {
						pair.Go(func() {
							r := e.push(t, "", pushOf(id, o))
							if r.status != http.StatusOK {
								errs <- fmt.Errorf("%s ordinal %d: %d %s", id, o, r.status, r.body)
								return
							}
							var res pushResult
							r.decode(&res)
							seqs[k] = res.Receipts[0]["seq"]
						})
					}
					pair.Wait()
					if seqs[0] != seqs[1] {
						errs <- fmt.Errorf("%s ordinal %d: receipts of seqs %v and %v", id, o, seqs[0], seqs[1])
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if h := e.head(t, "default"); h != clients*rounds {
			t.Fatalf("head = %d, want %d", h, clients*rounds)
		}
		var pulled struct {
			Commits []struct {
				Seq        int64 `json:"seq"`
				Provenance struct {
					MutationID string `json:"mutationId"`
				} `json:"provenance"`
			} `json:"commits"`
		}
		e.call(t, "GET", "/api/v1/spaces/default/log?after=0&limit=1000", nil).want(http.StatusOK).decode(&pulled)
		var ids []string
		for i, c := range pulled.Commits {
			if c.Seq != int64(i+1) {
				t.Fatalf("commit %d has seq %d", i, c.Seq)
			}
			ids = append(ids, c.Provenance.MutationID)
		}
		slices.Sort(ids)
		if len(slices.Compact(ids)) != clients*rounds {
			t.Fatalf("ordinals admitted more than once: %d distinct of %d", len(ids), len(pulled.Commits))
		}
	})
}
