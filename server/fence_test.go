package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/problem"
)

func TestFenceWithoutEngine(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	path := "/api/v1/spaces/default/fence"
	reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
	for _, q := range []string{"?seq=0", "?seq=5&triggers=a,b&triggers=c", "?seq=1&timeout=60s", "?seq=1&timeout=0s", "?seq=1&timeout=1500ms&triggers="} {
		wantNoEngine(t, q, e.call(t, "GET", path+q, nil))
		wantNoEngine(t, "reader "+q, e.do(t, req{Method: "GET", Path: path + q, Token: reader}))
	}
}

func TestFenceValidation(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	path := "/api/v1/spaces/default/fence"
	params := []struct{ query, param string }{
		{"", "seq"},
		{"?triggers=a", "seq"},
		{"?seq=", "seq"},
		{"?seq=-1", "seq"},
		{"?seq=x", "seq"},
		{"?seq=1&seq=2", "seq"},
		{"?seq=1&timeout=61s", "timeout"},
		{"?seq=1&timeout=2m", "timeout"},
		{"?seq=1&timeout=-1s", "timeout"},
		{"?seq=1&timeout=5", "timeout"},
		{"?seq=1&timeout=1s&timeout=2s", "timeout"},
		{"?seq=1&trigger=a", "trigger"},
		{"?seq=1&wait=1", "wait"},
	}
	for _, p := range params {
		wantDetail(t, p.query, e.call(t, "GET", path+p.query, nil).problem(problem.BadRequest), "parameter", p.param)
	}
	wantDetail(t, "singular", e.call(t, "GET", path+"?seq=1&trigger=a", nil).problem(problem.BadRequest), "suggestion", "triggers")
	other := e.token(auth.CreateParams{Space: "other", Role: auth.RoleReader})
	e.do(t, req{Method: "GET", Path: path + "?seq=1", Token: other}).problem(problem.Forbidden)
	e.do(t, req{Method: "GET", Path: path + "?seq=1"}).problem(problem.Unauthorized)
	e.call(t, "POST", path+"?seq=1", nil).want(405)
}

// fenceAt asks GET .../fence with the query q.
func (e *env) fenceAt(t *testing.T, q string) engine.FenceResult {
	t.Helper()
	var res engine.FenceResult
	e.call(t, "GET", "/api/v1/spaces/default/fence?"+q, nil).want(http.StatusOK).decode(&res)
	return res
}

// fenceQuietly is fenceAt for another goroutine: a failure is a zero
// result.
func (e *env) fenceQuietly(q string) engine.FenceResult {
	var res engine.FenceResult
	hr, err := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/spaces/default/fence?"+q, nil)
	if err != nil {
		return res
	}
	hr.Header.Set("Authorization", "Bearer "+e.admin)
	r, err := e.srv.Client().Do(hr)
	if err != nil {
		return res
	}
	defer r.Body.Close()
	if r.StatusCode == http.StatusOK {
		_ = json.NewDecoder(r.Body).Decode(&res)
	}
	return res
}

func TestFence(t *testing.T) {
	t.Parallel()
	forEachDriverEngine(t, func(e *env) {
		t := e.t
		release := make(chan struct{})
		var once sync.Once
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		t.Cleanup(hook.Close)
		t.Cleanup(func() { once.Do(func() { close(release) }) })

		// No enabled trigger: every seq is done at once.
		if res := e.fenceAt(t, "seq=0"); !res.Done || res.Seq != 0 || res.Waiting != nil {
			t.Errorf("fence without triggers = %+v", res)
		}
		saveTrigger(t, e, "on-task")
		e.call(t, "PUT", "/api/v1/spaces/default/functions/slow", map[string]any{"kind": "webhook", "url": hook.URL, "timeout": "30s"}).want(http.StatusCreated)
		e.call(t, "PUT", "/api/v1/spaces/default/triggers/hooked", map[string]any{
			"source": map[string]any{"changes": map[string]any{"types": []string{"task"}}}, "function": "slow",
		}).want(http.StatusCreated)

		s1 := e.putTask(t, "t1", map[string]any{"n": 1})
		// on-task finishes; hooked's delivery hangs in the webhook.
		e.fenced(t, s1, "on-task")
		start := time.Now()
		res := e.fenceAt(t, fmt.Sprintf("seq=%d&timeout=300ms", s1))
		if res.Done || res.Seq != s1 || !slices.Equal(res.Waiting, []string{"hooked"}) {
			t.Errorf("fence on a hanging delivery = %+v", res)
		}
		if took := time.Since(start); took < 300*time.Millisecond || took > 5*time.Second {
			t.Errorf("fence took %s with a 300ms timeout", took)
		}
		raw := e.call(t, "GET", fmt.Sprintf("/api/v1/spaces/default/fence?seq=%d&timeout=0s&triggers=on-task,hooked", s1), nil).want(http.StatusOK).obj()
		if w, _ := raw["waiting"].([]any); raw["done"] != false || len(w) != 1 || w[0] != "hooked" {
			t.Errorf("fence answer = %v", raw)
		}
		if res := e.fenceAt(t, fmt.Sprintf("seq=%d&triggers=on-task&timeout=0s", s1)); !res.Done {
			t.Errorf("fence on on-task alone = %+v", res)
		}
		// The webhook answers: the fence is passed while it waits.
		done := make(chan engine.FenceResult, 1)
		go func() { done <- e.fenceQuietly(fmt.Sprintf("seq=%d&timeout=10s", s1)) }()
		time.Sleep(100 * time.Millisecond)
		once.Do(func() { close(release) })
		if res := <-done; !res.Done {
			t.Errorf("fence after the webhook answered = %+v", res)
		}

		// A disabled trigger named explicitly holds the fence.
		e.call(t, "POST", "/api/v1/spaces/default/triggers/on-task/disable", nil).want(http.StatusOK)
		time.Sleep(200 * time.Millisecond) // the runner notices at its next lease round
		s2 := e.putTask(t, "t2", map[string]any{"n": 2})
		if res := e.fenceAt(t, fmt.Sprintf("seq=%d&triggers=on-task&timeout=100ms", s2)); res.Done || !slices.Equal(res.Waiting, []string{"on-task"}) {
			t.Errorf("fence on a disabled trigger = %+v", res)
		}
		if res := e.fenceAt(t, fmt.Sprintf("seq=%d&timeout=10s", s2)); !res.Done {
			t.Errorf("fence on the enabled triggers = %+v", res)
		}

		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.do(t, req{Method: "GET", Path: fmt.Sprintf("/api/v1/spaces/default/fence?seq=%d&timeout=1s", s2), Token: reader}).want(http.StatusOK)
		pe := e.call(t, "GET", "/api/v1/spaces/default/fence?seq=1&triggers=nope", nil).problem(problem.NotFound)
		if pe.Details["trigger"] != "nope" {
			t.Errorf("unknown trigger: details = %v", pe.Details)
		}
		e.call(t, "GET", "/api/v1/spaces/nowhere/fence?seq=1", nil).problem(problem.NotFound)
	})
}
