package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

// secrets are strings that only type b's data (entities, the triggers
// and functions that touch b, their deliveries) contains: a type-a
// reader must never see one in any answer.
var secrets = []string{"bee-", "SECRET-B", "tb-trig", "fb-func", "vb-view", `"type":"b"`}

// leakScene writes type a and type b data, triggers and functions on
// each, a failed delivery for b, a merge folding a b into an a and a split
// of an a into a b, and a view of each type. It returns the head.
func leakScene(t *testing.T, e *env) int64 {
	t.Helper()
	sp := "/api/v1/spaces/default/"
	e.call(t, "PUT", sp+"functions/fa-func", map[string]any{"kind": "expr", "writes": []string{"a"}, "code": "nil"}).want(http.StatusCreated)
	e.call(t, "PUT", sp+"functions/fb-func", map[string]any{"kind": "expr", "writes": []string{"b"},
		"code": `patch("b", entity.id, {"n": 1 / 0})`}).want(http.StatusCreated)
	e.call(t, "PUT", sp+"triggers/ta-trig", map[string]any{
		"source": map[string]any{"changes": map[string]any{"types": []string{"a"}}}, "function": "fa-func"}).want(http.StatusCreated)
	e.call(t, "PUT", sp+"triggers/tb-trig", map[string]any{
		"source":   map[string]any{"changes": map[string]any{"types": []string{"b"}, "when": `entity != null && entity.properties.s == "SECRET-B"`}},
		"function": "fb-func", "delivery": map[string]any{"maxAttempts": 1}}).want(http.StatusCreated)
	e.call(t, "PUT", sp+"views/va-view", map[string]any{"version": "v1", "types": []string{"a"}, "filter": map[string]any{"cel": "true"}}).want(http.StatusCreated)
	e.call(t, "PUT", sp+"views/vb-view", map[string]any{"version": "v1", "types": []string{"b"}, "filter": map[string]any{"cel": "true"}}).want(http.StatusCreated)
	e.call(t, "PUT", sp+"entities/a/a1", map[string]any{"x": 1}).want(http.StatusCreated)
	e.call(t, "PUT", sp+"entities/a/a2", map[string]any{"x": 2}).want(http.StatusCreated)
	e.call(t, "PUT", sp+"entities/b/bee-1", map[string]any{"s": "SECRET-B"}).want(http.StatusCreated)
	e.call(t, "PUT", sp+"entities/b/bee-2", map[string]any{"m": "folded"}).want(http.StatusCreated)
	e.call(t, "POST", sp+"mutations", map[string]any{"mutations": []map[string]any{
		{"op": "merge", "type": "a", "entityId": "a2", "from": map[string]any{"type": "b", "id": "bee-2"}},
		{"op": "split", "type": "a", "entityId": "a1", "into": map[string]any{"type": "b", "id": "bee-3"}, "properties": []string{"x"}},
	}}).want(http.StatusOK)
	// A trigger on b writing a: its a row is readable, the trigger and its
	// deliveries are not.
	e.call(t, "PUT", sp+"functions/cross-func", map[string]any{"kind": "expr", "writes": []string{"a"},
		"code": `put("a", "w1", {"k": 1})`}).want(http.StatusCreated)
	e.call(t, "PUT", sp+"triggers/cross-trig", map[string]any{
		"source": map[string]any{"changes": map[string]any{"types": []string{"b"}, "ops": []string{"put"}}}, "function": "cross-func"}).want(http.StatusCreated)
	e.call(t, "PUT", sp+"entities/b/bee-4", map[string]any{"s": "SECRET-B"}).want(http.StatusCreated)
	eventually(t, "the b deliveries ended", func() bool {
		return len(e.spaceDeliveries(t, "status=failed")) > 0 && len(e.spaceDeliveries(t, "trigger=cross-trig&status=succeeded")) > 0
	})
	return e.call(t, "PUT", sp+"entities/a/a3", map[string]any{"x": 3}).want(http.StatusCreated).seq()
}

// noSecret fails the test if body holds any of the secrets, except those
// what itself names (an error may repeat the name a request asked for).
func noSecret(t *testing.T, what string, body []byte) {
	t.Helper()
	for _, s := range secrets {
		if !strings.Contains(what, s) && strings.Contains(string(body), s) {
			t.Errorf("%s leaks %q: %s", what, s, body)
		}
	}
}

// TestAllowListProbe hits every read route with a token limited to type a
// (with log:read, so the trusted routes answer too) against type b data:
// no answer carries anything of b.
func TestAllowListProbe(t *testing.T) {
	t.Parallel()
	forEachDriverEngine(t, func(e *env) {
		t := e.t
		head := leakScene(t, e)
		tok := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Types: []string{"a"}, Scopes: []string{auth.ScopeLogRead}})
		sp := "/api/v1/spaces/default/"
		get := func(path string) *resp {
			t.Helper()
			r := e.do(t, req{Method: "GET", Path: path, Token: tok})
			noSecret(t, "GET "+path, r.body)
			return r
		}
		// The admin sees the secrets: the probe can fail.
		if r := e.call(t, "GET", sp+"changes?from=0", nil); !strings.Contains(string(r.body), "bee-") {
			t.Fatalf("the admin's changes lack b: %s", r.body)
		}
		for _, path := range []string{
			"/api/v1", "/api/v1/whoami", sp[:len(sp)-1], sp + "types", sp + "entities/a", sp + "entities/a/a1", sp + "entities/a/a2",
			sp + "changes?from=0", fmt.Sprint(sp, "changes?before=", head+1), sp + "changes?from=0&q=bee",
			sp + "log?after=0", sp + "functions", sp + "triggers", sp + "triggers/ta-trig", sp + "triggers/ta-trig/deliveries",
			sp + "deliveries", sp + "deliveries?status=failed", sp + "views", sp + "views/va-view",
			fmt.Sprint(sp, "fence?seq=", head, "&timeout=0s"),
		} {
			get(path).want(http.StatusOK)
		}
		for _, path := range []string{sp + "entities/b", sp + "entities/b/bee-1", sp + "types/b", sp + "entities/b?watch=1"} {
			get(path).problem(problem.Forbidden)
		}
		for _, path := range []string{sp + "functions/fb-func", sp + "triggers/tb-trig", sp + "triggers/tb-trig/deliveries",
			sp + "views/vb-view", sp + "fence?seq=1&triggers=tb-trig"} {
			get(path).problem(problem.NotFound)
		}
		for seq := int64(1); seq <= head; seq++ {
			for _, sub := range []string{"", "/stances", "/causes", "/tree"} {
				r := get(fmt.Sprint(sp, "changes/", seq, sub))
				if r.status != http.StatusOK && r.status != http.StatusForbidden {
					t.Errorf("changes/%d%s = %d %s", seq, sub, r.status, r.body)
				}
			}
		}
		for _, p := range []struct{ method, path string }{
			{"POST", sp + "views/vb-view/bootstrap"}, {"GET", sp + "views/vb-view/delta?cursor=x"},
			{"POST", sp + "deliveries/bulk"}, {"POST", sp + "triggers/tb-trig/backtest"}, {"POST", sp + "views/vb-view/backtest"},
		} {
			r := e.do(t, req{Method: p.method, Path: p.path, Token: tok, Body: map[string]any{}})
			noSecret(t, p.method+" "+p.path, r.body)
			r.problem(problem.Forbidden)
		}
		// The trigger from b to a and its deliveries stay hidden, although
		// the a row it wrote (and that row's actor) is readable.
		for _, path := range []string{sp + "triggers", sp + "deliveries", sp + "triggers/cross-trig", sp + "triggers/cross-trig/deliveries"} {
			if r := get(path); strings.Contains(string(r.body), `"trigger":"cross-trig"`) || strings.Contains(string(r.body), `"name":"cross-trig"`) {
				t.Errorf("GET %s shows cross-trig: %s", path, r.body)
			}
		}
		w1 := e.call(t, "GET", sp+"entities/a/w1", nil).want(http.StatusOK).obj()["version"].(float64)
		for _, sub := range []string{"/stances", "/tree"} {
			if r := get(fmt.Sprint(sp, "changes/", w1, sub)).want(http.StatusOK); strings.Contains(string(r.body), `"trigger":"cross-trig","seq"`) ||
				strings.Contains(string(r.body), `{"trigger":"cross-trig"`) {
				t.Errorf("changes/%v%s shows cross-trig's stance or deliveries: %s", w1, sub, r.body)
			}
		}
		_, records := e.viewSync(t, tok, "va-view", "frozen", 10)
		noSecret(t, "the a view", []byte(fmt.Sprint(records)))
		for _, path := range []string{sp + "changes?watch=1&from=0", sp + "entities/a?watch=1&from=0"} {
			s := e.watch(t, path, tok)
			noSecret(t, "watch "+path, []byte(s.until(head)))
		}
	})
}

// until reads lines until a row or bookmark at seq and returns them.
func (s *stream) until(seq int64) string {
	s.t.Helper()
	var b strings.Builder
	for {
		l := s.line()
		b.WriteString(l)
		if f := short(s.t, l); f == fmt.Sprint("row:", seq) || f == fmt.Sprint("bookmark:", seq) {
			return b.String()
		}
	}
}
