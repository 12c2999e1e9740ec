package eddy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/internal/polltest"
	"github.com/eddy-run/eddy/store"
)

// TestOpenHousekeeps checks that Open starts the housekeeper with
// Config.Retention and Close stops it (goleak in TestMain sees the rest).
func TestOpenHousekeeps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := eddy.Open(ctx, eddy.Config{DataDir: t.TempDir(),
		Retention: changelog.Retention{MaxRows: 2}, HousekeepInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	for i := range 5 {
		m := changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: fmt.Sprintf("t%d", i), Properties: json.RawMessage(`{}`)}
		req := changelog.WriteRequest{Space: eddy.DefaultSpace, Mutations: []changelog.Mutation{m}, Provenance: store.Provenance{Actor: "owner", Via: "api"}}
		if _, err := e.Log().Write(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	polltest.Until(t, "the space pruned to the newest 2 commits", func() bool {
		sp, err := e.Log().Space(ctx, eddy.DefaultSpace)
		if err != nil {
			t.Fatal(err)
		}
		return sp.Horizon == 3 && sp.Head == 5
	})
	if err := e.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}
