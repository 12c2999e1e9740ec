package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/eddy-run/eddy/auth"
	api "github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/internal/eddytest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The README's walk-through: edits made offline show at once as pending,
// a sync pushes them and their acknowledgements arrive, a change made
// elsewhere arrives, a view change resets the view, and the replica ends
// equal to the server's view.
func TestOfflineApp(t *testing.T) {
	srv := eddytest.New(t, eddytest.SQLite)
	ctx := context.Background()
	admin, err := api.New(srv.URL, api.Options{Token: srv.Admin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.CloseIdleConnections)
	sp := admin.Space("default")
	putView := func(version, cel string) {
		t.Helper()
		if _, _, err := sp.View("open-tasks").Put(ctx, map[string]any{"version": version, "types": []string{"task"}, "filter": map[string]any{"cel": cel}}); err != nil {
			t.Fatal(err)
		}
	}
	putView("v1", "entity.properties.done == false")
	_, writer := srv.Token(auth.CreateParams{Space: "default", Role: auth.RoleWriter, Actor: "phone"})
	db := filepath.Join(t.TempDir(), "tasks.db")
	offline := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		full := append([]string{"--server", srv.URL, "--token", writer, "--db", db}, args...)
		if err := run(ctx, full, &out); err != nil {
			t.Fatalf("offline %v: %v\n%s", args, err, out.String())
		}
		return out.String()
	}

	// Offline: nothing reaches the server, the list shows the edits.
	var out strings.Builder
	if err := run(ctx, []string{"--server", "http://127.0.0.1:1", "--token", writer, "--db", db, "add", "buy milk"}, &out); err != nil {
		t.Fatal(err)
	}
	milk := regexp.MustCompile(`added (t-[0-9a-f]+)`).FindStringSubmatch(out.String())[1]
	offline("add", "write report", "work")
	if l := offline("list"); !strings.Contains(l, "buy milk  (pending)") || !strings.Contains(l, "2 write(s) not yet acknowledged") {
		t.Fatalf("offline list:\n%s", l)
	}
	out.Reset()
	err = run(ctx, []string{"--server", "http://127.0.0.1:1", "--token", writer, "--db", db, "sync"}, &out)
	if err == nil || !strings.Contains(err.Error(), "your 2 write(s) stay queued") {
		t.Fatalf("sync while offline: %v", err)
	}

	// Back online.
	s := offline("sync")
	if !strings.Contains(s, "pushed 2 write(s)") || !strings.Contains(s, "bootstrapped 2 task(s)") || !strings.Contains(s, "0 write(s) still waiting") {
		t.Fatalf("sync:\n%s", s)
	}
	// Someone else adds a task; marking milk done makes it leave the view.
	if _, err := sp.Put(ctx, "task", "t-desk", map[string]any{"title": "tidy desk", "done": false}); err != nil {
		t.Fatal(err)
	}
	offline("done", milk)
	if l := offline("list"); !strings.Contains(l, "[x] "+milk) || !strings.Contains(l, "(pending)") {
		t.Fatalf("list after done:\n%s", l)
	}
	s = offline("sync")
	if !strings.Contains(s, "1 left the view") || !strings.Contains(s, "1 write(s) acknowledged") {
		t.Fatalf("second sync:\n%s", s)
	}
	if l := offline("list"); strings.Contains(l, milk) || !strings.Contains(l, "tidy desk") || strings.Contains(l, "pending") {
		t.Fatalf("list after sync:\n%s", l)
	}
	// A view change forces a reset, said aloud.
	putView("v2", "entity.properties.done == false && entity.properties.project == 'work'")
	s = offline("sync")
	if !strings.Contains(s, "view open-tasks: reset (view_changed)") || !strings.Contains(s, "bootstrapped 1 task(s)") {
		t.Fatalf("sync after the view change:\n%s", s)
	}
	if l := offline("list"); !strings.Contains(l, "write report  #work") || strings.Contains(l, "tidy desk") || !strings.Contains(l, "1 task(s)") {
		t.Fatalf("list after the reset:\n%s", l)
	}
	// A write the server refuses for good is said and dropped.
	offline("done", "t-nope")
	if s := offline("sync"); !strings.Contains(s, "the server refused patch t-nope") {
		t.Fatalf("refused write:\n%s", s)
	}
}
