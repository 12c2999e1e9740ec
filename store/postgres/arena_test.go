package postgres

import (
	"context"
	"fmt"
	neturl "net/url"
	"reflect"
	"runtime"
	"testing"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
	"github.com/eddy-run/eddy/store/postgres/pgtest"
)

// TestRawTailReadAllocatesLittle: the reads of a live tail (an evaluator
// woken by every commit, asking for a whole page past its cursor and
// finding one row or none) must not each set aside room for a whole page:
// an arena sized for 8,000 rows of the last page's size made every such
// read allocate megabytes, and the collector's work showed as a 20 ms
// tail in commit-to-function latency.
func TestRawTailReadAllocatesLittle(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	mustSpace(t, s, "s")
	var cs []appended
	for seq := int64(1); seq <= 300; seq++ {
		c, recs := putCommit(seq, nil, rec("task", fmt.Sprint("t", seq), seq, `{"title":"a row long enough to count"}`), "u", "")
		cs = append(cs, appended{c, recs})
	}
	write(t, s, "s", cs...)
	// A full page first, so the next reads know the rows' size.
	if got, err := s.RawCommits(ctx, store.CommitsParams{Space: "s", Limit: 8000}); err != nil || len(got) != 300 {
		t.Fatalf("full page: %d rows, %v", len(got), err)
	}
	for _, after := range []int64{299, 300} {
		var before, done runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := s.RawCommits(ctx, store.CommitsParams{Space: "s", After: after, Limit: 8000})
		runtime.ReadMemStats(&done)
		if err != nil || len(got) != int(300-after) {
			t.Fatalf("after %d: %d rows, %v", after, len(got), err)
		}
		if n := done.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("a tail read after %d allocated %d bytes, want well under a page's", after, n)
		}
	}
}

// TestRawPageAllocatesPerPage: a page of raw commits costs allocations
// per page (the arena's blocks, the rows, the strings), not per row: the
// 300 rows of a page read whole or partly (ChangesOf) take fewer
// allocations than rows.
func TestRawPageAllocatesPerPage(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	mustSpace(t, s, "s")
	putNotesAndTasks(t, s, 300, 10)
	for _, only := range [][]string{nil, {"task"}} {
		p := store.CommitsParams{Space: "s", Limit: 1000, NoReceipts: true, ChangesOf: only}
		if _, err := s.RawCommits(ctx, p); err != nil { // warm the statement cache
			t.Fatal(err)
		}
		var before, done runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := s.RawCommits(ctx, p)
		runtime.ReadMemStats(&done)
		if err != nil || len(got) != 300 {
			t.Fatalf("ChangesOf %q: %d rows, %v", only, len(got), err)
		}
		if n := done.Mallocs - before.Mallocs; n >= 300 {
			t.Errorf("ChangesOf %q: a page of 300 rows took %d allocations, want fewer than its rows", only, n)
		}
	}
}

// putNotesAndTasks commits n puts of new entities to space s in one
// transaction: every nth a task, the others notes.
func putNotesAndTasks(t *testing.T, s *Store, n, nth int64) {
	t.Helper()
	var cs []appended
	for seq := int64(1); seq <= n; seq++ {
		typ := "note"
		if seq%nth == 0 {
			typ = "task"
		}
		c, recs := putCommit(seq, nil, rec(typ, fmt.Sprint("e", seq), seq, `{"title":"a row"}`), "u", "")
		cs = append(cs, appended{c, recs})
	}
	write(t, s, "s", cs...)
}

// TestPagesReadWithoutScanPlans: the page reads' columns come back in
// the formats the arena decodes itself (rowcodec.RawReadable), so they
// skip pgx's scan plans; and a connection in another protocol (simple,
// every column as text), which must take the scan plans, reads the same
// rows.
func TestPagesReadWithoutScanPlans(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s := openURL(t, url)
	ctx := context.Background()
	mustSpace(t, s, "s")
	putNotesAndTasks(t, s, 40, 4)

	simple := openURL(t, withParam(t, url, "default_query_exec_mode", "simple_protocol"))
	rowsParams := []store.RowsParams{
		{Space: "s", Hi: 40, Limit: 100},
		{Space: "s", Lo: 10, Hi: 30, Limit: 7, Desc: true},
		{Space: "s", Hi: 40, Limit: 100, Filter: store.RowFilter{Types: []string{"task"}}},
		{Space: "s", Hi: 40, Limit: 100, Filter: store.RowFilter{EntityType: "task", EntityID: "e8"}},
	}
	for _, p := range rowsParams {
		q, args := rowsQuery(p)
		if p.Filter.EntityType != "" {
			args = append([]any{customPlan}, args...)
		}
		// A point read runs as customPlan (the extended protocol) even
		// over a simple-protocol connection.
		checkReadable(t, s, simple, p.Filter.EntityType != "", q, args...)
		readBothWays(t, s, simple, fmt.Sprintf("Rows %+v", p), func(st *Store) ([]store.Row, error) { return st.Rows(ctx, p) })
	}
	for _, p := range []store.CommitsParams{
		{Space: "s", Limit: 100},
		{Space: "s", After: 5, Limit: 10, NoReceipts: true},
		{Space: "s", Limit: 100, ChangesOf: []string{"task"}},
	} {
		args := commitsArgs(p)
		if p.ChangesOf != nil {
			args = append(args, p.ChangesOf)
		}
		checkReadable(t, s, simple, false, rawCommitsQuery(p), args...)
		readBothWays(t, s, simple, fmt.Sprintf("RawCommits %+v", p),
			func(st *Store) ([]store.RawCommit, error) { return st.RawCommits(ctx, p) })
	}
}

// checkReadable fails the test unless query's columns are raw-readable
// on fast and, unless simpleToo, not on simple (so that its reads take
// the scan plans).
func checkReadable(t *testing.T, fast, simple *Store, simpleToo bool, query string, args ...any) {
	t.Helper()
	if got := rawReadable(t, fast, query, args...); !got {
		t.Errorf("%s: columns are not raw-readable", query)
	}
	if got := rawReadable(t, simple, query, args...); got != simpleToo {
		t.Errorf("%s: raw-readable over the simple protocol %v, want %v", query, got, simpleToo)
	}
}

// readBothWays reads a page with read from fast (decoded from the raw
// bytes) and from simple (through the scan plans) and fails the test
// unless both read the same page, and not an empty one.
func readBothWays[T any](t *testing.T, fast, simple *Store, what string, read func(*Store) ([]T, error)) {
	t.Helper()
	a, err := read(fast)
	if err != nil {
		t.Fatal(err)
	}
	b, err := read(simple)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Errorf("%s: %d rows read raw, %d scanned, or they differ:\n%+v\n%+v", what, len(a), len(b), a, b)
	}
}

// rawReadable reports whether query's columns, read from s, are ones the
// arena decodes without scan plans.
func rawReadable(t *testing.T, s *Store, query string, args ...any) bool {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	return rowcodec.RawReadable(rows.FieldDescriptions())
}

// withParam returns url with the query parameter key set to value.
func withParam(t *testing.T, raw, key, value string) string {
	t.Helper()
	u, err := neturl.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}
