package eddy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// TestHubWired checks what Open wires for watch: commits wake the hub at
// once (the heartbeat is far away), and Close ends streams with the
// terminal unavailable frame.
func TestHubWired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := eddy.Open(ctx, eddy.Config{DataDir: t.TempDir(), Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	if e.Hub() == nil || e.Hub().Heartbeat() != time.Hour {
		t.Fatalf("hub = %v", e.Hub())
	}
	_, secret, err := e.Auth().Create(ctx, auth.CreateParams{Space: eddy.DefaultSpace, Role: auth.RoleReader})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() { _ = e.Close() }) // runs before srv.Close

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/spaces/default/changes?watch=1", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	lines := make(chan string, 8)
	go func() {
		defer close(lines)
		br := bufio.NewReader(res.Body)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case l := <-lines:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no line within 10s")
			return ""
		}
	}
	if l := next(); l != "{\"bookmark\":0}\n" {
		t.Fatalf("first line = %q", l)
	}
	_, err = e.Log().Write(ctx, changelog.WriteRequest{
		Space:      eddy.DefaultSpace,
		Mutations:  []changelog.Mutation{{Op: changelog.OpPut, Type: "task", EntityID: "t1", Properties: json.RawMessage(`{}`)}},
		Provenance: store.Provenance{Actor: "owner", Via: "api"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if l := next(); !strings.HasPrefix(l, `{"seq":1,`) {
		t.Fatalf("row line = %q", l)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if l := next(); !strings.HasPrefix(l, `{"error":{"code":"unavailable",`) {
		t.Fatalf("terminal line = %q", l)
	}
}
