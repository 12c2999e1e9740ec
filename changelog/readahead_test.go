package changelog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/sqlite"
)

// TestPullRawReadAhead: a sequential raw puller gets, page by page, the
// bytes a reader without read-ahead gets (the pages it took from the
// read-ahead included), and a prune after a page was read ahead still
// answers history_unavailable for the pruned position.
func TestPullRawReadAhead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "eddy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	lg := changelog.New(st, changelog.Options{})
	defer lg.Close()
	if _, err := lg.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		m := changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: fmt.Sprint("t", i), Properties: json.RawMessage(`{"n":1}`)}
		if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}, Provenance: store.Provenance{Actor: "owner", Via: "api"}}); err != nil {
			t.Fatal(err)
		}
	}
	encode := func(p changelog.RawPullPage) string {
		return string(p.AppendJSON(nil))
	}
	pages := 0
	for cursor, more := int64(0), true; more; pages++ {
		got, err := lg.PullRaw(ctx, "s", cursor, 4)
		if err != nil {
			t.Fatal(err)
		}
		want, err := lg.PullRawWith(ctx, "s", cursor, 4, changelog.PullOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if encode(got) != encode(want) {
			t.Fatalf("page after %d:\nread ahead %s\nread       %s", cursor, encode(got), encode(want))
		}
		cursor, more = got.NextCursor, got.HasMore
	}
	if pages != 7 {
		t.Errorf("%d pages, want 7", pages)
	}
	// Pages after 0 and 4: the one after 8 is read ahead; prune through 10.
	for _, after := range []int64{0, 4} {
		if _, err := lg.PullRaw(ctx, "s", after, 4); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lg.Prune(ctx, "s", 10); err != nil {
		t.Fatal(err)
	}
	var gone *changelog.HistoryUnavailableError
	if _, err := lg.PullRaw(ctx, "s", 8, 4); !errors.As(err, &gone) {
		t.Fatalf("after a prune through 10, the page after 8: %v, want history unavailable", err)
	}
	p, err := lg.PullRaw(ctx, "s", 10, 4)
	if err != nil || len(p.Commits) == 0 || p.Commits[0].Seq != 11 {
		t.Fatalf("the page after the horizon: %+v, %v", p, err)
	}
}

// TestSplitRaw: a page read with a large limit, cut with SplitRaw, gives
// the pages PullRaw answers one after the other with the small limit.
func TestSplitRaw(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "eddy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	lg := changelog.New(st, changelog.Options{})
	defer lg.Close()
	if _, err := lg.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		var ms []changelog.Mutation
		for j := range 1 + i%3 {
			ms = append(ms, changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: fmt.Sprint("t", i, "-", j), Properties: json.RawMessage(`{"n":1}`)})
		}
		if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Mutations: ms, Atomic: true, Provenance: store.Provenance{Actor: "owner", Via: "api"}}); err != nil {
			t.Fatal(err)
		}
	}
	sp, err := lg.Space(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	big, err := lg.PullRawWith(ctx, "s", 0, 1000, changelog.PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if big.HasMore {
		t.Fatal("the big page does not reach the head")
	}
	cursor := int64(0)
	for i, got := range changelog.SplitRaw(big.Commits, 4) {
		want, err := lg.PullRawWith(ctx, "s", cursor, 4, changelog.PullOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want.Commits) || got[0].Seq != want.Commits[0].Seq || got[len(got)-1].Seq != want.NextCursor {
			t.Fatalf("page %d after %d: split %d commits from %d, PullRaw %d to %d", i, cursor, len(got), got[0].Seq, len(want.Commits), want.NextCursor)
		}
		cursor = want.NextCursor
	}
	if cursor != sp.Head {
		t.Errorf("the split pages end at %d, the head is %d", cursor, sp.Head)
	}
}
