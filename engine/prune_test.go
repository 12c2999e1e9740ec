package engine_test

import (
	"context"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/definitions"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Pruning past an enabled trigger's cursor is refused (a disabled
// trigger does not hold pruning back); the housekeeper's limit stops
// there too. The engine is not started, so cursors stay where they are.
func TestPruneStopsAtCursors(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		st := open(t)
		log := changelog.New(st, changelog.Options{})
		t.Cleanup(func() { _ = log.Close() })
		eng := engine.New(log, nil, testOptions())
		t.Cleanup(func() { _ = eng.Stop(context.Background()) })
		defs := definitions.New(log, definitions.Options{Hooks: eng})
		ctx := t.Context()
		must(log.EnsureSpace(ctx, space))
		w := func(id string) int64 {
			res, err := log.Write(ctx, changelog.WriteRequest{Space: space, Mutations: []changelog.Mutation{put("task", id, map[string]any{"n": 1})},
				Provenance: store.Provenance{Actor: "owner", Via: "api"}})
			if err != nil {
				t.Fatal(err)
			}
			return res.LastSeq
		}
		first := w("t1")
		if _, _, err := defs.PutFunction(ctx, space, "noop", []byte(`{"kind":"expr","code":"nil"}`)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := defs.PutTrigger(ctx, space, "behind", []byte(`{"source":{"changes":{"types":["task"]}},"function":"noop"}`)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := defs.PutTrigger(ctx, space, "off", []byte(`{"source":{"changes":{"types":["task"]}},"function":"noop","enabled":false,"start":"beginning"}`)); err != nil {
			t.Fatal(err)
		}
		w("t2")
		w("t3")
		head := w("t4")
		limit, holders, err := eng.PruneLimit(ctx, space)
		if err != nil || limit != first || holders["behind"] != first || len(holders) != 1 {
			t.Fatalf("limit %d holders %v (%v), want %d held by behind", limit, holders, err, first)
		}
		if err := eng.CheckPrune(ctx, space, first); err != nil {
			t.Fatalf("pruning through the cursor: %v", err)
		}
		if err := eng.CheckPrune(ctx, space, head); problem.CodeOf(err) != problem.Conflict {
			t.Fatalf("pruning past the cursor: %v, want conflict", err)
		}
		rep, err := log.Housekeep(ctx, changelog.Retention{MaxRows: 0, MaxAge: 0})
		if err != nil || len(rep.Pruned) != 0 {
			t.Fatalf("no policy pruned %v (%v)", rep.Pruned, err)
		}
		rep, err = log.Housekeep(ctx, changelog.Retention{MaxRows: 1, Limit: func(ctx context.Context, sp string) (int64, error) {
			l, _, err := eng.PruneLimit(ctx, sp)
			return l, err
		}})
		if err != nil {
			t.Fatal(err)
		}
		if got := rep.Pruned[space]; got != first {
			t.Fatalf("housekeeper pruned to %d, want the trigger's cursor %d", got, first)
		}
	})
}
