package server

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
)

// treeShape is a tree answer reduced to its rows and deliveries.
func treeShape(a treeAnswer) string {
	s := fmt.Sprintf("root %d:", a.Root)
	for _, r := range a.Rows {
		op := "hidden"
		if r.Row != nil {
			op = r.Row.Op
		}
		s += fmt.Sprintf(" %s@%d", op, r.Depth)
		if r.Delivery != "" {
			s += "(" + r.Trigger + ")"
		}
	}
	s += " |"
	for _, d := range a.Deliveries {
		s += fmt.Sprintf(" %s:%s@%d", d.Trigger, d.Status, d.Depth)
	}
	return s
}

func TestTree(t *testing.T) {
	t.Parallel()
	forEachDriverEngine(t, func(e *env) {
		t := e.t
		ping := chainScene(t, e)
		park := e.spaceDeliveries(t, "status=parked")[0]
		base := "/api/v1/spaces/default/changes/"
		const want = "root %d: put@0 patch@1(loop) park@2(loop) | loop:succeeded@1 loop:parked@2"
		var a treeAnswer
		for _, seq := range []int64{ping, park.Seq, park.Seq + 1} {
			e.call(t, "GET", fmt.Sprint(base, seq, "/tree"), nil).want(http.StatusOK).decode(&a)
			if got := treeShape(a); got != fmt.Sprintf(want, ping) || a.Seq != seq || a.Pruned || a.Truncated {
				t.Errorf("tree of %d = %s (%+v)", seq, got, a)
			}
		}
		if a.Rows[1].CausedBy != ping || a.Rows[2].Delivery != park.ID || a.Deliveries[1].ID != park.ID || a.Deliveries[1].Seq != park.Seq {
			t.Errorf("links = %+v", a)
		}
		e.call(t, "GET", fmt.Sprint(base, ping, "/tree?rows=2"), nil).want(http.StatusOK).decode(&a)
		if got := treeShape(a); got != fmt.Sprintf("root %d: put@0 patch@1(loop) | loop:succeeded@1 loop:parked@2", ping) || !a.Truncated {
			t.Errorf("two rows = %s (truncated %t)", got, a.Truncated)
		}
		task := e.call(t, "GET", fmt.Sprint(base, ping-1, "/tree"), nil).want(http.StatusOK)
		task.decode(&a)
		if got := treeShape(a); got != fmt.Sprintf("root %d: put@0 | bad:failed@1", ping-1) {
			t.Errorf("the task row's tree = %s", got)
		}

		// Trusted readers only; rows a types allow-list hides keep their
		// place without their content.
		reader := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		e.do(t, req{Method: "GET", Path: fmt.Sprint(base, ping, "/tree"), Token: reader}).problem(problem.Forbidden)
		pings := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, Types: []string{"ping"}, Scopes: []string{auth.ScopeLogRead}})
		e.do(t, req{Method: "GET", Path: fmt.Sprint(base, ping, "/tree"), Token: pings}).want(http.StatusOK).decode(&a)
		if got := treeShape(a); got != fmt.Sprintf("root %d: put@0 patch@1(loop) hidden@2(loop) | loop:succeeded@1 loop:parked@2", ping) || !a.Rows[2].Hidden {
			t.Errorf("a ping reader's tree = %s", got)
		}
		e.do(t, req{Method: "GET", Path: fmt.Sprint(base, ping-1, "/tree"), Token: pings}).problem(problem.Forbidden)

		for _, bad := range []string{"?rows=0", "?rows=2001", "?rows=x", "?depth=1"} {
			e.call(t, "GET", fmt.Sprint(base, ping, "/tree", bad), nil).problem(problem.BadRequest)
		}
		e.call(t, "GET", base+"0/tree", nil).problem(problem.BadRequest)
		e.call(t, "GET", fmt.Sprint(base, park.Seq+2, "/tree"), nil).problem(problem.BadRequest)
		e.call(t, "POST", "/api/v1/spaces/default/prune", map[string]any{"through": ping, "force": true}).want(http.StatusOK)
		e.call(t, "GET", fmt.Sprint(base, ping, "/tree"), nil).problem(problem.Compacted)
		e.call(t, "GET", fmt.Sprint(base, park.Seq+1, "/tree"), nil).want(http.StatusOK).decode(&a)
		if got := treeShape(a); got != fmt.Sprintf("root %d: patch@1(loop) park@2(loop) | loop:parked@2", park.Seq) || !a.Pruned {
			t.Errorf("the pruned chain's tree = %s (pruned %t)", got, a.Pruned)
		}
	})
}
