package server

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/triggers"
)

func TestStancesWithoutEngine(t *testing.T) {
	t.Parallel()
	e := sqliteEnv(t)
	e.call(t, "PUT", "/api/v1/spaces/default/entities/task/t1", map[string]any{"title": "x"}).want(201)
	path := "/api/v1/spaces/default/changes/%s/stances"
	wantNoEngine(t, "stances", e.call(t, "GET", fmt.Sprintf(path, "1"), nil))
	reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Types: []string{"note"}})
	wantNoEngine(t, "reader stances", e.do(t, req{Method: "GET", Path: fmt.Sprintf(path, "1"), Token: reader}))

	for _, seq := range []string{"0", "-1", "x", "1.5", "2"} {
		wantDetail(t, "seq "+seq, e.call(t, "GET", fmt.Sprintf(path, seq), nil).problem(problem.BadRequest), "parameter", "seq")
	}
	if pe := e.call(t, "GET", fmt.Sprintf(path, "2"), nil).problem(problem.BadRequest); pe.Details["head"] != float64(1) {
		t.Errorf("ahead of head: details = %v", pe.Details)
	}
	wantDetail(t, "query", e.call(t, "GET", fmt.Sprintf(path, "1")+"?trigger=a", nil).problem(problem.BadRequest), "parameter", "trigger")
	other := e.token(auth.CreateParams{Space: "other", Role: auth.RoleAdmin})
	e.do(t, req{Method: "GET", Path: fmt.Sprintf(path, "1"), Token: other}).problem(problem.Forbidden)
	e.call(t, "GET", "/api/v1/spaces/nowhere/changes/1/stances", nil).problem(problem.NotFound)
}

// stancesOf returns trigger → stance of the row seq.
func (e *env) stancesOf(t *testing.T, seq int64) map[string]engine.TriggerStance {
	t.Helper()
	var st engine.Stances
	e.call(t, "GET", fmt.Sprintf("/api/v1/spaces/default/changes/%d/stances", seq), nil).want(http.StatusOK).decode(&st)
	if st.Seq != seq {
		t.Fatalf("stances seq = %d, want %d", st.Seq, seq)
	}
	out := map[string]engine.TriggerStance{}
	for _, s := range st.Stances {
		out[s.Trigger] = s
	}
	return out
}

func TestStances(t *testing.T) {
	t.Parallel()
	forEachDriverEngine(t, func(e *env) {
		t := e.t
		s0 := e.putTask(t, "t0", map[string]any{"n": 0})
		saveTrigger(t, e, "on-task")
		e.call(t, "PUT", "/api/v1/spaces/default/triggers/on-done", map[string]any{
			"source":   map[string]any{"changes": map[string]any{"types": []string{"task"}, "when": "entity.properties.n > 1"}},
			"function": "f",
		}).want(http.StatusCreated)
		e.call(t, "PUT", "/api/v1/spaces/default/triggers/fussy", map[string]any{
			"source":   map[string]any{"changes": map[string]any{"types": []string{"task"}, "when": "entity.properties.n / 0 == 1"}},
			"function": "f",
		}).want(http.StatusCreated)
		s1 := e.putTask(t, "t1", map[string]any{"n": 1})
		s2 := e.putTask(t, "t2", map[string]any{"n": 2})
		e.fenced(t, s2)

		got := e.stancesOf(t, s0)
		for _, name := range []string{"on-task", "on-done", "fussy"} {
			if got[name].Stance != triggers.StanceNotStarted {
				t.Errorf("%s on seq %d = %+v, want not_started", name, s0, got[name])
			}
		}
		got = e.stancesOf(t, s1)
		if s := got["on-task"]; s.Stance != triggers.StanceMatched || s.Delivery == nil || s.Delivery.Status != "succeeded" || s.Delivery.Attempts != 1 || s.Delivery.ID == "" {
			t.Errorf("on-task on seq %d = %+v", s1, s)
		}
		if s := got["on-done"]; s.Stance != triggers.StanceNotMatched || s.Delivery != nil {
			t.Errorf("on-done on seq %d = %+v", s1, s)
		}
		if s := got["fussy"]; s.Stance != triggers.StanceError || s.Error == "" {
			t.Errorf("fussy on seq %d = %+v", s1, s)
		}
		if s := e.stancesOf(t, s2)["on-done"]; s.Stance != triggers.StanceMatched {
			t.Errorf("on-done on seq %d = %+v", s2, s)
		}
		// The raw answer: seq and one stance per trigger, by name.
		raw := e.call(t, "GET", fmt.Sprintf("/api/v1/spaces/default/changes/%d/stances", s1), nil).want(http.StatusOK).obj()
		list, _ := raw["stances"].([]any)
		if k := keys(raw); !slices.Equal(k, []string{"seq", "stances"}) || len(list) != 3 || list[0].(map[string]any)["trigger"] != "fussy" {
			t.Errorf("stances = %v", raw)
		}

		// A disabled trigger leaves new rows pending.
		e.call(t, "POST", "/api/v1/spaces/default/triggers/on-task/disable", nil).want(http.StatusOK)
		time.Sleep(200 * time.Millisecond) // the runner notices at its next lease round
		s3 := e.putTask(t, "t3", map[string]any{"n": 3})
		e.fenced(t, s3, "on-done")
		if s := e.stancesOf(t, s3)["on-task"]; s.Stance != triggers.StancePending {
			t.Errorf("disabled on-task on seq %d = %+v", s3, s)
		}

		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.do(t, req{Method: "GET", Path: fmt.Sprintf("/api/v1/spaces/default/changes/%d/stances", s1), Token: reader}).want(http.StatusOK)
		e.call(t, "GET", fmt.Sprintf("/api/v1/spaces/default/changes/%d/stances", s3+1), nil).problem(problem.BadRequest)
		e.call(t, "POST", "/api/v1/spaces/default/prune", map[string]any{"through": s1}).want(http.StatusOK)
		e.call(t, "GET", fmt.Sprintf("/api/v1/spaces/default/changes/%d/stances", s1), nil).problem(problem.Compacted)
	})
}
