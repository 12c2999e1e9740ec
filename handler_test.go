package eddy_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
)

// Handler serves the API of an embedded eddy without any server.Config
// wiring: a token made through Auth reads the default space.
func TestHandler(t *testing.T) {
	e, err := eddy.Open(t.Context(), eddy.Config{DataDir: filepath.Join(t.TempDir(), "data")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	_, secret, err := e.Auth().Create(t.Context(), auth.CreateParams{Space: eddy.DefaultSpace, Role: auth.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/v1/spaces/default/changes", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET changes: %d", resp.StatusCode)
	}
}
