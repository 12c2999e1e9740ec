package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/examples/todo/receiver/hook"
	"github.com/eddy-run/eddy/functions"
)

const secret = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo="

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFrom(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokenPath := filepath.Join(dir, "admin.token")
	if err := os.WriteFile(tokenPath, []byte("eddy_fromfile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.token")

	cfg, err := configFrom(env(map[string]string{"TODO_WEBHOOK_SECRET": secret}), tokenPath)
	if err != nil || cfg.Server != defaultServer || cfg.Token != "eddy_fromfile" || cfg.Secret != secret {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	cfg, err = configFrom(env(map[string]string{
		"TODO_WEBHOOK_SECRET": secret, "EDDY_SERVER": "http://127.0.0.1:7171", "EDDY_TOKEN": "eddy_env",
	}), missing)
	if err != nil || cfg.Server != "http://127.0.0.1:7171" || cfg.Token != "eddy_env" {
		t.Fatalf("from env: %+v, %v", cfg, err)
	}
	if _, err := configFrom(env(nil), tokenPath); err == nil || !strings.Contains(err.Error(), "TODO_WEBHOOK_SECRET") {
		t.Fatalf("no secret: %v", err)
	}
	if _, err := configFrom(env(map[string]string{"TODO_WEBHOOK_SECRET": secret}), missing); err == nil || !strings.Contains(err.Error(), "EDDY_TOKEN") {
		t.Fatalf("no token: %v", err)
	}
}

// The handler main serves refuses what the secret does not sign.
func TestReceiverRefusesUnsignedRequests(t *testing.T) {
	t.Parallel()
	h, err := hook.New(hook.Config{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := `{"delivery": "dlv_1", "row": {"seq": 1}}`
	for _, path := range []string{"/hook", "/overdue"} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("unsigned POST %s: %d, want 401", path, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hook", strings.NewReader(body))
	if err := functions.SetHeaders(req.Header, secret, "dlv_1", time.Now(), []byte(body)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("signed POST /hook: %d, want 204", resp.StatusCode)
	}
}
