package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	viewclient "github.com/eddy-run/eddy/views/client"
)

func TestSyncCLI(t *testing.T) {
	t.Parallel()
	s, _ := newViewsTestServer(t)
	s.runWith(t, cliOptions{stdin: `views:
  alpha:
    version: v1
    types: [task]
    filter: {fieldEquals: {field: project, expected: alpha}}
  open:
    version: v1
    types: [task]
    filter: {cel: "entity.properties.open == true"}
`}, "apply", "-f", "-").ok(t)
	s.run(t, "put", "task", "t1", `{"project":"alpha","open":false}`).ok(t)
	s.run(t, "put", "task", "t2", `{"project":"beta","open":true}`).ok(t)
	s.run(t, "put", "task", "t3", `{"project":"gamma","open":false}`).ok(t)
	db := filepath.Join(t.TempDir(), "local.db")
	r := s.run(t, "sync", "alpha", "open", "--db", db, "--once", "--page-size", "1").ok(t)
	if !strings.Contains(r.stderr, "bootstrap alpha: 1 records, done") || !strings.Contains(r.stderr, "bootstrap open: 1 records, done") {
		t.Fatalf("first sync: %s", r.stderr)
	}
	if n := records(t, db); n != 2 {
		t.Fatalf("replica holds %d records, want t1 and t2", n)
	}
	// A second run resumes from the stored cursors: no bootstrap.
	s.run(t, "put", "task", "t3", `{"project":"alpha","open":false}`).ok(t)
	r = s.run(t, "sync", "alpha", "open", "--db", db, "--once").ok(t)
	if strings.Contains(r.stderr, "bootstrap") || !strings.Contains(r.stdout, "alpha: 1 upserted") || records(t, db) != 3 {
		t.Fatalf("resumed sync: %s %s", r.stdout, r.stderr)
	}
	// A changed view is reset and bootstrapped again, and said so.
	s.runWith(t, cliOptions{stdin: `views:
  alpha:
    version: v2
    types: [task]
    filter: {fieldEquals: {field: project, expected: gamma}}
`}, "apply", "-f", "-").ok(t)
	r = s.run(t, "sync", "alpha", "open", "--db", db, "--once").ok(t)
	if !strings.Contains(r.stderr, "view alpha: reset_required (view_changed)") || records(t, db) != 1 {
		t.Fatalf("after a view change: %s (%d records)", r.stderr, records(t, db))
	}
	s.run(t, "views", "rotate-epoch").ok(t)
	r = s.run(t, "sync", "alpha", "open", "--db", db, "--once").ok(t)
	if !strings.Contains(r.stderr, "reset_required (epoch_changed): the space's history changed") {
		t.Fatalf("after an epoch rotation: %s", r.stderr)
	}
	s.run(t, "sync", "alpha", "--once").fails(t, exitUsage, "--db is required")
	s.run(t, "sync", "nope", "--db", db, "--once").fails(t, exitError, "not_found")
}

func TestSyncCLIPushesQueuedWrites(t *testing.T) {
	t.Parallel()
	s, _ := newViewsTestServer(t)
	s.runWith(t, cliOptions{stdin: "views:\n  all:\n    version: v1\n    types: [task]\n    filter: {cel: \"true\"}\n"}, "apply", "-f", "-").ok(t)
	db := filepath.Join(t.TempDir(), "local.db")
	st, err := viewclient.OpenSQLite(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	mv := viewclient.New(st)
	for _, m := range []changelog.Mutation{
		{Op: changelog.OpPut, Type: "task", EntityID: "a", Properties: []byte(`{"x":1}`)},
		{Op: changelog.OpPatch, Type: "task", EntityID: "missing", Patch: []byte(`{"x":2}`)},
	} {
		if _, err := mv.Write(context.Background(), "default", m); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	r := s.run(t, "sync", "all", "--db", db, "--once").ok(t)
	if !strings.Contains(r.stderr, "pushed 2 queued write(s) through ordinal 2; 1 rejected") || records(t, db) != 1 {
		t.Fatalf("sync: %s", r.stderr)
	}
}

// records counts the records a replica holds in the default space.
func records(t *testing.T, db string) int {
	t.Helper()
	st, err := viewclient.OpenSQLite(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := viewclient.New(st).Records(context.Background(), "default", "")
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}
