package views

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// summary renders a delta page's commits as "seq:kind type/id@version".
func summary(p DeltaPage) string {
	var parts []string
	for _, c := range p.Commits {
		for _, ch := range c.Changes {
			s := fmt.Sprintf("%d:%s %s/%s@%d", c.Seq, ch.Kind, ch.Type, ch.ID, ch.Version)
			if ch.Record != nil {
				s += " " + string(ch.Record.Properties)
			}
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}

// TestDeltaProjection walks every projection case of seed 001 through
// real writes: enter (with a create older than the cursor), stay, leave,
// delete, and deletes and changes of entities the view never held.
func TestDeltaProjection(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		e.write(put("task", "t1", `{"project":"alpha","title":"one"}`), put("task", "t2", `{"project":"beta","title":"two"}`),
			put("note", "n1", `{"project":"alpha"}`))
		e.putView("alpha", alphaView)
		pages := e.bootstrap("alpha", Keyset, 10, nil)
		c := newClient(e.t)
		c.applyBootstrap(pages)
		if got := c.ids(); fmt.Sprint(got) != "[task/t1@1]" {
			e.t.Fatalf("bootstrap = %v", got)
		}
		e.write(patch("task", "t2", `{"project":"alpha"}`)) // 4: t2 enters; its create (2) predates the cursor
		e.write(patch("task", "t1", `{"title":"uno"}`))     // 5: t1 stays
		e.write(patch("task", "t1", `{"project":"beta"}`))  // 6: t1 leaves
		e.write(put("task", "t3", `{"project":"beta"}`))    // 7: never held
		e.write(del("task", "t3"))                          // 8: delete of something never held
		e.write(patch("note", "n1", `{"x":1}`))             // 9: another type
		e.write(del("task", "t2"))                          // 10: a held entity deleted
		p := e.delta("alpha", c.cursor, 100)
		want := `4:upsert task/t2@4 {"project":"alpha","title":"two"}; 5:upsert task/t1@5 {"project":"alpha","title":"uno"}; ` +
			`6:removed_from_scope task/t1@6; 10:deleted task/t2@10`
		if got := summary(p); got != want {
			e.t.Fatalf("delta:\n got %s\nwant %s", got, want)
		}
		if p.HasMore || p.PreviousCursor != c.cursor || p.Context != pages[0].Context {
			e.t.Fatalf("page hasMore %v previous %q context %+v", p.HasMore, p.PreviousCursor, p.Context)
		}
		c.applyDelta(p)
		if got, want := c.ids(), e.truth("alpha"); !reflect.DeepEqual(got, want) {
			e.t.Fatalf("client %v, view %v", got, want)
		}
		body, _ := json.Marshal(p)
		for _, leak := range []string{"receipt", "provenance", "conflictGroups", "before"} {
			if strings.Contains(string(body), leak) {
				e.t.Fatalf("a view page carries %s: %s", leak, body)
			}
		}
	})
}

// TestCurrentStateDelta: a currentState view sends removed_from_scope for
// every change of its types it does not hold now, held before or not.
func TestCurrentStateDelta(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		e.putView("open", `{"version":"v1","types":["task"],"filter":{"currentState":{"cel":"entity.properties.open == true"}}}`)
		pages := e.bootstrap("open", Frozen, 10, nil)
		c := newClient(e.t)
		c.applyBootstrap(pages)
		e.write(put("task", "t1", `{"open":false}`))  // 1: never held, sent as a removal
		e.write(patch("task", "t1", `{"open":true}`)) // 2: now held
		e.write(del("task", "t1"))                    // 3
		e.write(put("note", "n1", `{"open":false}`))  // 4: outside its types
		p := e.delta("open", c.cursor, 100)
		want := `1:removed_from_scope task/t1@1; 2:upsert task/t1@2 {"open":true}; 3:deleted task/t1@3`
		if got := summary(p); got != want {
			e.t.Fatalf("delta:\n got %s\nwant %s", got, want)
		}
		c.applyDelta(p)
		if len(c.records) != 0 {
			e.t.Fatalf("client holds %v", c.ids())
		}
	})
}

// TestDeltaBudget: the budget counts source commits, a commit is never
// split, irrelevant commits are left out while the cursor moves over
// them, and a retried cursor answers the same page.
func TestDeltaBudget(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		e.putView("alpha", alphaView)
		pages := e.bootstrap("alpha", Keyset, 10, nil)
		c := newClient(e.t)
		c.applyBootstrap(pages)
		e.write(put("task", "a", `{"project":"alpha"}`), put("task", "b", `{"project":"alpha"}`)) // 1, 2
		for i := range 5 {
			e.write(put("note", fmt.Sprint("n", i), `{}`)) // 3..7: nothing for the view
		}
		e.write(changelog.Mutation{Op: changelog.OpMerge, Type: "task", EntityID: "a", From: &store.EntityKey{Type: "task", ID: "b"}}) // 8: two changes
		p1 := e.delta("alpha", c.cursor, 2)
		if got := summary(p1); got != `1:upsert task/a@1 {"project":"alpha"}; 2:upsert task/b@2 {"project":"alpha"}` || !p1.HasMore {
			e.t.Fatalf("page 1: %s hasMore %v", got, p1.HasMore)
		}
		again := e.delta("alpha", c.cursor, 2)
		b1, _ := json.Marshal(p1)
		b2, _ := json.Marshal(again)
		if string(b1) != string(b2) {
			e.t.Fatalf("retry differs:\n%s\n%s", b1, b2)
		}
		c.applyDelta(p1)
		p2 := e.delta("alpha", c.cursor, 5)
		if len(p2.Commits) != 0 || !p2.HasMore || p2.Cursor == p1.Cursor {
			e.t.Fatalf("irrelevant stretch: %s hasMore %v, cursor moved %v", summary(p2), p2.HasMore, p2.Cursor != p1.Cursor)
		}
		c.applyDelta(p2)
		p3 := e.delta("alpha", c.cursor, 1)
		if got := summary(p3); got != `8:upsert task/a@8 {"project":"alpha"}; 8:deleted task/b@8` || p3.HasMore {
			e.t.Fatalf("merge page: %s hasMore %v", got, p3.HasMore)
		}
		c.applyDelta(p3)
		if last := e.delta("alpha", c.cursor, 1); len(last.Commits) != 0 || last.HasMore || last.Cursor != c.cursor {
			e.t.Fatalf("caught up: %+v", last)
		}
		for _, b := range []int{-1, MaxBudget + 1} {
			_, err := e.svc.Delta(e.ctx, DeltaParams{Space: "s", View: "alpha", Cursor: c.cursor, Budget: b, Reader: admin})
			if problem.CodeOf(err) != problem.BadRequest {
				e.t.Fatalf("budget %d: %v", b, err)
			}
		}
	})
}

// TestDeltaBadCursor: malformed and foreign cursors are bad_request.
func TestDeltaBadCursor(t *testing.T) {
	t.Parallel()
	forEachDriver(t, func(e *env) {
		e.putView("alpha", alphaView)
		e.putView("other", alphaView)
		if _, err := e.log.CreateSpace(e.ctx, "s2"); err != nil {
			e.t.Fatal(err)
		}
		if _, _, err := e.svc.Put(e.ctx, "s2", "alpha", []byte(alphaView)); err != nil {
			e.t.Fatal(err)
		}
		other := e.bootstrap("other", Keyset, 10, nil)
		op, err := e.svc.Open(e.ctx, OpenParams{Space: "s2", View: "alpha", Strategy: Keyset, Reader: admin})
		if err != nil {
			e.t.Fatal(err)
		}
		s2page, err := e.svc.Page(e.ctx, "s2", "alpha", op.Token, admin)
		if err != nil {
			e.t.Fatal(err)
		}
		for name, cur := range map[string]string{"empty": "", "garbage": "%%%", "another view's": *other[0].Cursor,
			"another space's": *s2page.Cursor, "a bootstrap token": op.Token} {
			_, err := e.svc.Delta(e.ctx, DeltaParams{Space: "s", View: "alpha", Cursor: cur, Reader: admin})
			if problem.CodeOf(err) != problem.BadRequest {
				e.t.Errorf("%s cursor: %v, want bad_request", name, err)
			}
		}
		if _, err := e.svc.Delta(e.ctx, DeltaParams{Space: "s", View: "nope", Cursor: "x", Reader: admin}); problem.CodeOf(err) != problem.NotFound {
			e.t.Errorf("unknown view: %v", err)
		}
	})
}
