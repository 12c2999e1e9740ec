package sqlite

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// TestDeliveryWritesBuildNoEphemeralTables: creating a delivery and
// completing it evaluate the partial indexes' WHERE for the old and the
// new row. Written as comparisons (migration 0020) they build no
// ephemeral b-tree; as IN lists of three or more constants (before
// 0020, checked here too) they built one each on every run of the
// statement. (An update returning the row, and a bulk discard, build one
// of their own to hold the rows they return or visit.)
func TestDeliveryWritesBuildNoEphemeralTables(t *testing.T) {
	t.Parallel()
	before, after := openThrough(t, 19), newStore(t)
	for name, q := range map[string]string{"insert": sqlDeliveryInsert, "complete": sqlDeliveryComplete} {
		if n := opcodes(t, before, q)["OpenEphemeral"]; n == 0 {
			t.Errorf("%s before 0020: no ephemeral table; the check cannot tell", name)
		}
		if n := opcodes(t, after, q)["OpenEphemeral"]; n > 0 {
			t.Errorf("%s builds %d ephemeral tables a run:\n%s", name, n, q)
		}
	}
}

// opcodes counts the opcodes of query's program, compiled with every
// parameter NULL.
func opcodes(t *testing.T, s *Store, query string) map[string]int {
	t.Helper()
	n := strings.Count(query, "?")
	for _, m := range regexp.MustCompile(`\?(\d+)`).FindAllStringSubmatch(query, -1) {
		v, _ := strconv.Atoi(m[1])
		n = max(n, v)
	}
	rows, err := s.r.QueryContext(context.Background(), "EXPLAIN "+query, make([]any, n)...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(any)
	}
	for rows.Next() {
		if err := rows.Scan(vals...); err != nil {
			t.Fatal(err)
		}
		if op, ok := (*vals[1].(*any)).(string); ok {
			out[op]++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigrateDeliveriesStatusTerms migrates a database written before
// 0020, with deliveries of every status, and reads them back through the
// rebuilt partial indexes: the counts by status, the open listing and
// the listing of one stopped status, each through its index.
func TestMigrateDeliveriesStatusTerms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openThrough(t, 19)
	statuses := []string{"pending", "running", "retrying", "succeeded", "failed", "parked", "discarded"}
	for i := range 70 {
		st := statuses[i%len(statuses)]
		_, err := s.direct().ExecContext(ctx, `INSERT INTO deliveries (`+deliveryCols+`)
VALUES ('s', ?, 't', ?, 'task', 'e', ?, 1, 0, '', 0, ?, ?)`, fmt.Sprintf("d%03d", i), i+1, st, i, i)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	stats, err := s.DeliveryStats(ctx, "s", "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range statuses {
		if n := stats.ByStatus[store.DeliveryStatus(st)]; n != 10 {
			t.Errorf("%s: %d, want 10 (%v)", st, n, stats.ByStatus)
		}
	}
	for _, tc := range []struct {
		statuses []store.DeliveryStatus
		index    string
	}{
		{store.OpenDeliveryStatuses, "deliveries_open"},
		{[]store.DeliveryStatus{store.DeliveryParked}, "deliveries_stopped"},
	} {
		p := store.DeliveryListParams{Space: "s", Trigger: "t", Statuses: tc.statuses, Limit: 100}
		if plan := explain(t, s, deliveryListQuery(&p), "s", 0, "", "t", jsonStrings(tc.statuses), 100); !strings.Contains(plan, "USING INDEX "+tc.index) {
			t.Errorf("listing %v: plan\n%s", tc.statuses, plan)
		}
		ds, err := s.DeliveryList(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 10*len(tc.statuses) {
			t.Errorf("listing %v: %d deliveries, want %d", tc.statuses, len(ds), 10*len(tc.statuses))
		}
		for _, d := range ds {
			if !slices.Contains(tc.statuses, d.Status) {
				t.Errorf("listing %v: %s is %s", tc.statuses, d.ID, d.Status)
			}
		}
	}
}

func jsonStrings(ss []store.DeliveryStatus) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = `"` + string(s) + `"`
	}
	return "[" + strings.Join(parts, ",") + "]"
}
