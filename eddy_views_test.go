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
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/views"
)

// TestViewMetricsWired checks that Open wires view sync into the
// metrics: projected changes, resets by reason, open bootstrap sessions
// and live view streams.
func TestViewMetricsWired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := eddy.Open(ctx, eddy.Config{DataDir: filepath.Join(t.TempDir(), "data"), NoEngine: true})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	admin := auth.NewReader(&auth.Principal{Space: auth.AllSpaces, Role: auth.RoleAdmin}, nil)
	if _, err := e.Log().Write(ctx, changelog.WriteRequest{Space: eddy.DefaultSpace, Provenance: store.Provenance{Actor: "owner", Via: "api"},
		Mutations: []changelog.Mutation{{Op: changelog.OpPut, Type: "task", EntityID: "t1", Properties: json.RawMessage(`{"open":true}`)}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Views().Put(ctx, eddy.DefaultSpace, "open", []byte(`{"version":"v1","types":["task"],"filter":{"cel":"entity.properties.open"}}`)); err != nil {
		t.Fatal(err)
	}
	op, err := e.Views().Open(ctx, views.OpenParams{Space: eddy.DefaultSpace, View: "open", Reader: admin})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Views().Page(ctx, eddy.DefaultSpace, "open", op.Token, admin); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Views().Page(ctx, eddy.DefaultSpace, "open", "bogus", admin); views.ResetReason(err) != views.TokenUnknown {
		t.Fatalf("bogus token: %v", err)
	}
	rec := httptest.NewRecorder()
	e.Telemetry().Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		"\neddy_view_bootstrap_sessions 1\n",
		"\neddy_view_streams 0\n",
		`eddy_view_changes_projected_total{space="default",view="open"} 1`,
		`eddy_view_resets_total{reason="bootstrap_token_unknown",space="default"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", strings.TrimSpace(want), grepViews(string(body)))
		}
	}
}

func grepViews(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, "view") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
