package eddy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// TestTelemetryWired checks that Open wires the log and the hub into the
// metrics.
func TestTelemetryWired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := eddy.Open(ctx, eddy.Config{DataDir: filepath.Join(t.TempDir(), "data")})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	_, err = e.Log().Write(ctx, changelog.WriteRequest{
		Space:      eddy.DefaultSpace,
		Mutations:  []changelog.Mutation{{Op: changelog.OpPut, Type: "task", EntityID: "t1", Properties: json.RawMessage(`{}`)}},
		Provenance: store.Provenance{Actor: "owner", Via: "api"},
	})
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	rec := httptest.NewRecorder()
	e.Telemetry().Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{"\neddy_commits_total 1\n", "\neddy_watchers 0\n"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", strings.TrimSpace(want), body)
		}
	}
}
