package changelog_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/storetest"
)

// TestPullRowsFirst: with PullOptions.RowsFirst a sequential pull whose
// rows answer for the cursor reads no row of the space and gets the page
// a judged pull gets; a short page read ahead is judged against the
// space, so a commit made after it was read is not missed; an empty,
// pruned, unknown or bad cursor gets the judged pull's answer.
func TestPullRowsFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counted := &storetest.SpaceReads{}
	lg := pullLog(t, func(st store.Store) store.Store { counted.Store = st; return counted })
	rowsFirst := changelog.PullOptions{ReadAhead: true, RowsFirst: true}
	pull := func(after int64, limit int) (changelog.RawPullPage, int64) {
		t.Helper()
		counted.Reset()
		p, err := lg.PullRawWith(ctx, "s", after, limit, rowsFirst)
		if err != nil {
			t.Fatalf("pull after %d: %v", after, err)
		}
		want, err := lg.PullRawWith(ctx, "s", after, limit, changelog.PullOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, w := string(p.AppendJSON(nil)), string(want.AppendJSON(nil)); got != w {
			t.Fatalf("page after %d:\nrows first %s\njudged     %s", after, got, w)
		}
		return p, counted.Reads() - 1 // the judged pull read it once
	}
	// 25 commits, pages of 4: every page answers from its rows.
	for cursor, more := int64(0), true; more; {
		p, reads := pull(cursor, 4)
		if reads != 0 && cursor < 24 {
			t.Errorf("page after %d read the space %d times, want 0", cursor, reads)
		}
		cursor, more = p.NextCursor, p.HasMore
	}
	// At the head: an empty page, judged against the space.
	if p, reads := pull(25, 4); len(p.Commits) != 0 || p.HasMore || reads != 1 {
		t.Errorf("at the head: %d commits, more %v, %d reads", len(p.Commits), p.HasMore, reads)
	}

	// A short page read ahead (after 24: only 25) misses what is
	// committed after it was read: judged against the space, it says so.
	for _, after := range []int64{16, 20} {
		if _, err := lg.PullRawWith(ctx, "s", after, 4, rowsFirst); err != nil {
			t.Fatal(err)
		}
	}
	m := changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: "late", Properties: json.RawMessage(`{"n":2}`)}
	if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}, Provenance: store.Provenance{Actor: "owner", Via: "api"}}); err != nil {
		t.Fatal(err)
	}
	counted.Reset()
	p, err := lg.PullRawWith(ctx, "s", 24, 4, rowsFirst)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Commits); n == 0 || p.Commits[0].Seq != 25 || (n == 1 && !p.HasMore) || counted.Reads() != 1 {
		t.Fatalf("after 24, past a short page read ahead and commit 26: %d commits, next %d, more %v, %d space reads",
			n, p.NextCursor, p.HasMore, counted.Reads())
	}

	// Bad, unknown and pruned cursors answer as a judged pull does.
	if _, err := lg.PullRawWith(ctx, "s", 99, 4, rowsFirst); problem.CodeOf(err) != problem.BadRequest {
		t.Errorf("after 99: %v, want bad_request", err)
	}
	if _, err := lg.PullRawWith(ctx, "s", -1, 4, rowsFirst); problem.CodeOf(err) != problem.BadRequest {
		t.Errorf("after -1: %v, want bad_request", err)
	}
	if _, err := lg.PullRawWith(ctx, "nowhere", 0, 4, rowsFirst); problem.CodeOf(err) != problem.NotFound {
		t.Errorf("unknown space: %v, want not_found", err)
	}
	if _, err := lg.Prune(ctx, "s", 10); err != nil {
		t.Fatal(err)
	}
	var gone *changelog.HistoryUnavailableError
	if _, err := lg.PullRawWith(ctx, "s", 5, 4, rowsFirst); !errors.As(err, &gone) {
		t.Errorf("after 5, pruned through 10: %v, want history unavailable", err)
	}
	if p, err := lg.PullRawWith(ctx, "s", 10, 4, rowsFirst); err != nil || p.Commits[0].Seq != 11 {
		t.Errorf("after the horizon: %+v, %v", p, err)
	}
}
