package changelog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/sqlite"
)

// BenchmarkReadJudged reads one forward page of 1,000 rows on SQLite:
// plain (an allow-list judges each row alone) against judged (every row
// needs its commit, as rows of a type with an access rule do). The ratio
// judged/plain is the cost of judging rows on their snapshots.
func BenchmarkReadJudged(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "eddy.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	lg := changelog.New(st, changelog.Options{})
	defer lg.Close()
	if _, err := lg.CreateSpace(ctx, "s"); err != nil {
		b.Fatal(err)
	}
	const n = 1000
	for i := range n / 100 {
		ms := make([]changelog.Mutation, 100)
		for j := range ms {
			ms[j] = changelog.Mutation{Op: changelog.OpPut, Type: "doc", EntityID: fmt.Sprintf("d%d", i*100+j),
				Properties: json.RawMessage(`{"members":["ann","bob"],"title":"x"}`)}
		}
		if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "s", Mutations: ms}); err != nil {
			b.Fatal(err)
		}
	}
	plain := changelog.Filter{Allow: func(*store.Row) bool { return true }}
	judged := plain
	judged.NeedsCommit = func(*store.Row) bool { return true }
	judged.CommitAllow = func(c *store.Commit) bool { return len(c.Changes) > 0 && c.Changes[0].After != nil }
	for _, bc := range []struct {
		name string
		f    changelog.Filter
	}{{"plain", plain}, {"judged", judged}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				page, err := lg.Read(ctx, "s", 0, bc.f, n)
				if err != nil || len(page.Rows) != n {
					b.Fatalf("read: %d rows, %v", len(page.Rows), err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
