package changelog_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/sqlite"
)

// TestCloseWaitsForWrites checks that Close returns only after the writes
// under way have committed, and that later writes are refused.
func TestCloseWaitsForWrites(t *testing.T) {
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
	if _, err := lg.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	const writers = 8
	var wg sync.WaitGroup
	applied := make([]int64, writers)
	for i := range writers {
		wg.Go(func() {
			m := changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: "t" + string(rune('a'+i)), Properties: json.RawMessage(`{"n":1}`)}
			res, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}, Provenance: store.Provenance{Actor: "owner", Via: "api"}})
			if err == nil {
				applied[i] = res.Receipts[0].Seq
			} else if problem.CodeOf(err) != problem.Unavailable {
				t.Errorf("write %d: %v", i, err)
			}
		})
	}
	if err := lg.Close(); err != nil {
		t.Fatal(err)
	}
	// Every write Close let through has committed by now.
	sp, err := st.SpaceGet(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	n := int64(0)
	for _, seq := range applied {
		if seq > 0 {
			n++
		}
	}
	if sp.Head != n {
		t.Fatalf("head %d after Close, but %d writes were acknowledged", sp.Head, n)
	}
	m := changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: "late", Properties: json.RawMessage(`{}`)}
	if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{m}}); problem.CodeOf(err) != problem.Unavailable {
		t.Fatalf("write after Close: %v, want unavailable", err)
	}
}
