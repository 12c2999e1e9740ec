package server

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/watch"
)

// heavyWhen reaches the per-row cost limit on a row naming 150
// properties (the evaluation is cut there: the row does not match), yet
// passes the static estimate (which counts lists at 50).
const heavyWhen = `row.payload.properties.all(x, row.payload.properties.all(y, x != y || x == y))`

// putLists writes n entities of 150 properties each: each
// row's payload.properties lists 150 names.
func putLists(e *env, n int) {
	e.t.Helper()
	props := make(map[string]any, 150)
	for i := range 150 {
		props[fmt.Sprintf("p%d", i)] = i
	}
	for done := 0; done < n; {
		ms := make([]map[string]any, min(n-done, 100))
		for i := range ms {
			ms[i] = map[string]any{"op": "put", "type": "task", "entityId": fmt.Sprintf("t%d", done+i), "properties": props}
		}
		e.call(e.t, "POST", "/api/v1/spaces/default/mutations", map[string]any{"mutations": ms}).want(http.StatusOK)
		done += len(ms)
	}
}

// TestWhenRefusedAtCompile: a when whose static cost is pathological, or
// that is a row field rather than a bool, is a 400 before any row is read.
func TestWhenRefusedAtCompile(t *testing.T) {
	t.Parallel()
	nums := make([]string, 250)
	for i := range nums {
		nums[i] = fmt.Sprint(i)
	}
	l := "[" + strings.Join(nums, ",") + "]"
	forEachDriver(t, func(e *env) {
		for _, tc := range []struct{ when, reason string }{
			{l + `.all(x, ` + l + `.all(y, ` + l + `.all(z, x+y+z >= 0)))`, "cost"},
			{`row.payload.l.all(x, row.payload.l.all(y, row.payload.l.all(z, x == y)))`, "cost"},
			{`row.op`, ""},
			{`row.payload`, ""},
		} {
			for _, path := range []string{"changes?from=0", "changes?before=1", "changes?watch=1", "entities/task?watch=1", "deliveries?limit=10"} {
				pe := e.call(e.t, "GET", "/api/v1/spaces/default/"+path+"&when="+url.QueryEscape(tc.when), nil).
					want(http.StatusBadRequest).problem("bad_request")
				if pe.Details["parameter"] != "when" || (tc.reason != "" && pe.Details["reason"] != tc.reason) {
					e.t.Errorf("%s when=%.40q: details %v, want parameter when, reason %q", path, tc.when, pe.Details, tc.reason)
				}
			}
		}
	})
}

// TestWhenBudget: a request's when evaluations share one budget across
// the page; past it the answer is a 400 (a terminal frame on a watch
// stream), not a page that took as long as the rows made it.
func TestWhenBudget(t *testing.T) {
	t.Parallel()
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, d, watch.Options{Heartbeat: testHeartbeat}, func(c *Config) {
				c.WhenBudget = predicate.Budget{Cost: 2000, Wall: time.Hour}
			})
			putLists(e, 20)
			// A few hundred cost units a row: the budget ends it after a
			// handful of the 20 rows.
			q := "&when=" + url.QueryEscape(`row.payload.properties.exists(p, p == "none")`)
			for _, path := range []string{"changes?from=0", "changes?before=21"} {
				pe := e.call(t, "GET", "/api/v1/spaces/default/"+path+q, nil).want(http.StatusBadRequest).problem("bad_request")
				if pe.Details["reason"] != "evaluation_budget" {
					t.Errorf("%s: %+v, want reason evaluation_budget", path, pe)
				}
			}
			// A cheap when over the same rows stays well inside it.
			e.call(t, "GET", "/api/v1/spaces/default/changes?from=0&when="+url.QueryEscape(`row.type == "task"`), nil).want(http.StatusOK)
			s := e.watch(t, "/api/v1/spaces/default/changes?watch=1&from=0"+q, e.admin)
			if f := s.frame(); f != "bookmark:0" {
				t.Fatalf("first frame %s, want bookmark:0", f)
			}
			for {
				f := s.frame()
				if strings.HasPrefix(f, "row:") {
					continue
				}
				if !strings.Contains(f, `"bad_request"`) || !strings.Contains(f, "evaluation_budget") {
					t.Fatalf("frame %s, want the terminal bad_request frame of the budget", f)
				}
				break
			}
			s.ended()
		})
	}
}

// TestWhenStopsWhenClientLeaves: a watch stream judging costly rows stops
// evaluating as soon as its client goes, not after the whole batch (here
// 300 rows of the per-row limit each: many seconds of CPU).
func TestWhenStopsWhenClientLeaves(t *testing.T) {
	t.Parallel()
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, d, watch.Options{Heartbeat: testHeartbeat}, func(c *Config) {
				c.WhenBudget = predicate.Budget{Cost: math.MaxUint64, Wall: time.Hour}
			})
			putLists(e, 300)
			s := e.watch(t, "/api/v1/spaces/default/changes?watch=1&from=0&when="+url.QueryEscape(heavyWhen), e.admin)
			if f := s.frame(); f != "bookmark:0" {
				t.Fatalf("first frame %s, want bookmark:0", f)
			}
			s.close()
			// Unnoticed, the stream would judge two catch-up reads (64 and
			// 128 rows, several seconds of CPU) before a write finds the
			// client gone; noticed, it stops within one evaluation.
			const leave = 2 * time.Second
			deadline := time.Now().Add(leave)
			for e.hub.Watchers() > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("stream still evaluating %v after its client left", leave)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestWhenNotBoolAtRunTime: a when on a payload value (here the list of
// property names), whose type only the row tells, that is not a bool
// answers 400 naming the row (reason not_bool), on forward pages and
// history; it does not answer an empty page.
func TestWhenNotBoolAtRunTime(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		seq := e.putTask(e.t, "t1", map[string]any{"title": "a string, not a bool"})
		for _, path := range []string{"changes?from=0", fmt.Sprintf("changes?before=%d", seq+1)} {
			pe := e.call(e.t, "GET", "/api/v1/spaces/default/"+path+"&when="+url.QueryEscape("row.payload.properties"), nil).
				want(http.StatusBadRequest).problem("bad_request")
			if pe.Details["parameter"] != "when" || pe.Details["reason"] != "not_bool" {
				e.t.Errorf("%s: details %v, want parameter when, reason not_bool", path, pe.Details)
			}
		}
	})
}
