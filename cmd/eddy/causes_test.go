package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/client"
)

// newChainServer is newTestServer holding a causal chain: seq 1 an API
// put, seq 2 a write of trigger stamp's delivery d1 caused by it, seq 3 a
// write of relay's d2 caused by seq 2. It returns the eddy too.
func newChainServer(t *testing.T) (*testServer, *eddy.Eddy) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	e, err := eddy.Open(ctx, eddy.Config{DataDir: dir})
	if err != nil {
		t.Fatalf("open eddy: %v", err)
	}
	secret, _, err := auth.BootstrapAdmin(ctx, e.Auth(), filepath.Join(dir, tokenFile))
	if err != nil {
		t.Fatalf("bootstrap admin: %v", err)
	}
	hs := serveAPI(t, serverConfig(e))
	t.Cleanup(func() {
		hs.Close()
		if err := e.Close(); err != nil {
			t.Errorf("close eddy: %v", err)
		}
	})
	s := &testServer{url: hs.URL, dir: dir, admin: secret}
	key, err := causality.Key(ctx, e.Store())
	if err != nil {
		t.Fatal(err)
	}
	s.put(t, "", `{"n": 0}`)
	for i, d := range []causality.Effect{
		{Trigger: "stamp", ID: "d1", Cause: causality.Cause{Seq: 1, Depth: 0}},
		{Trigger: "relay", ID: "d2", Cause: causality.Cause{Seq: 2, Depth: 1, Root: 1}},
	} {
		tok, err := causality.Mint(key, d.Claims(eddy.DefaultSpace, time.Now().Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		s.put(t, tok, `{"n": `+string(rune('1'+i))+`}`)
	}
	return s, e
}

// put writes task t1 over HTTP, with an Eddy-Cause token when one is
// given.
func (s *testServer) put(t *testing.T, cause, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, s.url+"/api/v1/spaces/default/entities/task/t1", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.admin)
	if cause != "" {
		req.Header.Set("Eddy-Cause", cause)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("put: status %d", res.StatusCode)
	}
}

func TestCauses(t *testing.T) {
	t.Parallel()
	s, _ := newChainServer(t)

	rows := tableRows(s.run(t, "causes", "3").ok(t).stdout)
	want := [][]string{
		{"3", "2", "relay", "d2", "caused by the next row"},
		{"2", "1", "stamp", "d1", "caused by the next row"},
		{"1", "0", "-", "-", "root: caused 2 of budget 1000 rows, depth cap 16"},
	}
	if len(rows) != len(want) {
		t.Fatalf("table rows = %q", rows)
	}
	for i, r := range rows {
		if got := strings.Join(strings.Fields(r), " "); got != strings.Join(want[i], " ") {
			t.Errorf("row %d = %q, want %q", i, got, strings.Join(want[i], " "))
		}
	}

	ans := decodeOne[client.Causes](t, s.run(t, "causes", "2", "--json").ok(t).stdout)
	if ans.Seq != 2 || len(ans.Chain) != 2 || ans.Chain[0].Trigger != "stamp" || ans.Chain[1].Depth != 0 ||
		ans.Root != 1 || ans.RootRows != 2 || ans.Budget != causality.DefaultBudget || ans.Cap != causality.DefaultCap {
		t.Fatalf("--json = %+v", ans)
	}

	s.run(t, "prune", "--through", "1").ok(t)
	rows = tableRows(s.run(t, "causes", "2").ok(t).stdout)
	if len(rows) != 2 || !strings.Contains(rows[1], "pruned") || !strings.HasPrefix(rows[1], "1 ") {
		t.Fatalf("after prune: %q", rows)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(s.run(t, "causes", "2", "--json").ok(t).stdout), &raw); err != nil {
		t.Fatal(err)
	}
	if chain := raw["chain"].([]any); len(chain) != 2 || chain[1].(map[string]any)["pruned"] != true {
		t.Fatalf("--json after prune = %v", raw)
	}
}

func TestCausesFails(t *testing.T) {
	t.Parallel()
	s, e := newChainServer(t)
	_, reader, err := e.Auth().Create(context.Background(), auth.CreateParams{Space: "default", Role: auth.RoleReader})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		o    cliOptions
		args []string
		code int
		want string
	}{
		{"no seq", cliOptions{}, []string{"causes"}, exitUsage, "want 1 argument"},
		{"bad seq", cliOptions{}, []string{"causes", "x"}, exitUsage, "SEQ \"x\""},
		{"zero", cliOptions{}, []string{"causes", "0"}, exitUsage, "SEQ \"0\""},
		{"ahead of head", cliOptions{}, []string{"causes", "9"}, exitError, "bad_request"},
		{"no log:read", cliOptions{env: map[string]string{"EDDY_TOKEN": reader}}, []string{"causes", "3"}, exitError, "forbidden"},
	}
	for _, tt := range tests {
		s.runWith(t, tt.o, tt.args...).fails(t, tt.code, tt.want)
	}
}
