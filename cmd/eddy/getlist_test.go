package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// cellSep separates a table's columns (tabwriter pads with 2+ spaces).
var cellSep = regexp.MustCompile(`\s{2,}`)

// tableOf splits a table into its header cells and its rows' cells.
func tableOf(t *testing.T, out string) (head []string, rows [][]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatalf("no table in %q", out)
	}
	for i, l := range lines {
		cells := cellSep.Split(strings.TrimSpace(l), -1)
		if i == 0 {
			head = cells
			continue
		}
		rows = append(rows, cells)
	}
	return head, rows
}

// TestGetPrintsListColumns: by default (and with -o wide) `eddy X get
// NAME` prints the header of `eddy X list` and the resource's row of it,
// for every kind of definition, kubectl-like; entities print JSON by
// default for get and list alike, and the same table under -o wide.
func TestGetPrintsListColumns(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	doc := `types:
  note: {properties: {body: {kind: string}}}
  task:
    strict: true
    properties: {title: {kind: string}, status: {kind: string}}
    states: {status: {initial: open, transitions: {open: [done], done: [open]}}}
functions:
  stamp: {kind: expr, writes: [task], code: 'patch("task", entity.id, {"a": 1})'}
  hook: {kind: webhook, url: 'https://example.com/h'}
triggers:
  on-done: {function: stamp, source: {changes: {types: [task], when: 'entity.properties.status == "done"'}}}
  notify: {function: hook, enabled: false, source: {changes: {types: [task]}}}
views:
  open: {version: v1, types: [task], filter: {cel: 'entity.properties.status == "open"'}, fields: [title]}
  all-notes: {version: v1, types: [note], filter: {cel: 'true'}}
`
	s.runWith(t, cliOptions{stdin: doc}, "apply", "-f", "-").ok(t)
	s.run(t, "put", "task", "t1", `{"title": "one", "status": "open"}`).ok(t)
	s.run(t, "put", "task", "t2", `{"title": "two", "status": "open"}`).ok(t)

	for _, c := range []struct{ kind, name string }{
		{"types", "task"}, {"types", "note"},
		{"functions", "stamp"}, {"functions", "hook"},
		{"triggers", "on-done"}, {"triggers", "notify"},
		{"views", "open"}, {"views", "all-notes"},
	} {
		for _, wide := range []bool{false, true} {
			args := func(a ...string) []string {
				if wide {
					a = append(a, "-o", "wide")
				}
				return a
			}
			listHead, listRows := tableOf(t, s.run(t, args(c.kind, "list")...).ok(t).stdout)
			getHead, getRows := tableOf(t, s.run(t, args(c.kind, "get", c.name)...).ok(t).stdout)
			if !slices.Equal(getHead, listHead) {
				t.Errorf("%s get %s (wide %v): header %q, list's %q", c.kind, c.name, wide, getHead, listHead)
			}
			i := slices.IndexFunc(listRows, func(r []string) bool { return r[0] == c.name })
			if len(getRows) != 1 || i < 0 || !slices.Equal(getRows[0], listRows[i]) {
				t.Errorf("%s get %s (wide %v): rows %q, list's %q", c.kind, c.name, wide, getRows, listRows)
			}
		}
	}
	// The wide table has more columns than the default one.
	if h, _ := tableOf(t, s.run(t, "types", "get", "task").ok(t).stdout); !slices.Equal(h, []string{"NAME", "STRICT", "PROPERTIES", "STATES"}) {
		t.Errorf("types get header = %q", h)
	}
	if _, rows := tableOf(t, s.run(t, "types", "get", "task").ok(t).stdout); !slices.Equal(rows[0], []string{"task", "true", "status,title", "status"}) {
		t.Errorf("types get row = %q", rows)
	}

	// Entities: JSON by default (get: the record; list: a line per record),
	// the same table under -o wide.
	get := decodeOne[record](t, s.run(t, "get", "task", "t1").ok(t).stdout)
	listed := decodeAll[record](t, s.run(t, "list", "task").ok(t).stdout)
	if get.ID != "t1" || len(listed) != 2 || listed[0].ID != "t1" || listed[0].Version != get.Version {
		t.Errorf("get task t1 = %+v, list task = %+v", get, listed)
	}
	listHead, listRows := tableOf(t, s.run(t, "list", "task", "-o", "wide").ok(t).stdout)
	getHead, getRows := tableOf(t, s.run(t, "get", "task", "t1", "-o", "wide").ok(t).stdout)
	if !slices.Equal(getHead, listHead) || len(getRows) != 1 || !slices.Equal(getRows[0], listRows[0]) {
		t.Errorf("get task t1 -o wide = %q %q, list's %q %q", getHead, getRows, listHead, listRows)
	}

	// describe keeps the definition (no engine here: the definition alone).
	if d := decodeOne[map[string]any](t, s.run(t, "triggers", "describe", "on-done").ok(t).stdout); d["name"] != "on-done" {
		t.Errorf("triggers describe = %v", d)
	}
}
