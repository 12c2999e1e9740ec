package changelog_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/sqlite"
)

// TestObserve checks that Options.Observe sees every group transaction
// with its commits and rejections.
func TestObserve(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "eddy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []changelog.GroupStats
	lg := changelog.New(st, changelog.Options{Observe: func(s changelog.GroupStats) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, s)
	}})
	if _, err := lg.CreateSpace(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	put := func(id string, ver int64) changelog.Mutation {
		m := changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: id, Properties: json.RawMessage(`{"n":1}`)}
		if ver > 0 {
			m.IfVersion = &ver
		}
		return m
	}
	tests := []struct {
		name       string
		mutations  []changelog.Mutation
		commits    int
		rejections int
	}{
		{"two puts", []changelog.Mutation{put("a", 0), put("b", 0)}, 2, 0},
		{"noop", []changelog.Mutation{put("a", 0)}, 0, 0},
		{"stale version", []changelog.Mutation{put("a", 99)}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			req := changelog.WriteRequest{Space: "s", Mutations: tt.mutations, Provenance: store.Provenance{Actor: "owner", Via: "api"}}
			if _, err := lg.Write(ctx, req); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 {
				t.Fatalf("observed %d groups, want 1", len(seen))
			}
			s := seen[0]
			if s.Space != "s" || s.Requests != 1 || s.Commits != tt.commits || s.Rejections != tt.rejections || s.Err != nil {
				t.Errorf("stats = %+v, want commits %d rejections %d", s, tt.commits, tt.rejections)
			}
			if s.Duration <= 0 {
				t.Errorf("duration = %v, want > 0", s.Duration)
			}
		})
	}
}
