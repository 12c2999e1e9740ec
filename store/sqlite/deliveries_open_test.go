package sqlite

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
	"github.com/eddy-run/eddy/store/storetest"
)

// TestMigrateDeliveriesOpen: deliveries written before migration 0017
// (the open deliveries' index keyed by status) are listed the same after
// it: a trigger's open ones in (seq, id) order, read through the new
// index, and its others through deliveries_trigger; and counted the
// same after 0018 (the closed deliveries' index).
func TestMigrateDeliveriesOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openThrough(t, 16)
	// Trigger t1 of space s: every fifth delivery open (three statuses in
	// turn), the rest done; trigger t2's and space s2's all open.
	_, err := s.direct().ExecContext(ctx, `
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 300)
INSERT INTO deliveries (`+deliveryCols+`)
SELECT sp, 'd' || sp || tr || n, tr, n, 'task', 'e' || n,
    CASE WHEN tr = 't1' AND sp = 's' AND n % 5 <> 0 THEN 'succeeded'
         ELSE CASE n % 3 WHEN 0 THEN 'pending' WHEN 1 THEN 'running' ELSE 'retrying' END END,
    1, 0, '', 0, n, n
FROM g CROSS JOIN (SELECT 't1' AS tr UNION ALL SELECT 't2') CROSS JOIN (SELECT 's' AS sp UNION ALL SELECT 's2')`)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if plan := explain(t, s, deliveryListQuery(&store.DeliveryListParams{Trigger: "t1", Statuses: store.OpenDeliveryStatuses}),
		"s", 0, "", "t1", `["pending","running","retrying"]`, 10); !strings.Contains(plan, "USING INDEX deliveries_open (space=? AND trigger=? AND (seq,id)>(?,?))") {
		t.Fatalf("open listing plan:\n%s", plan)
	}
	var got []string
	p := store.DeliveryListParams{Space: "s", Trigger: "t1", Statuses: store.OpenDeliveryStatuses, Limit: 7}
	for {
		page, err := s.DeliveryList(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page {
			if !d.Status.Open() || d.Trigger != "t1" || d.Space != "s" {
				t.Fatalf("listed %+v", d)
			}
			got = append(got, d.ID)
		}
		if len(page) < p.Limit {
			break
		}
		p.After = store.DeliveryPosition{Seq: page[len(page)-1].Seq, ID: page[len(page)-1].ID}
	}
	var want []string
	for n := 5; n <= 300; n += 5 {
		want = append(want, fmt.Sprintf("dst1%d", n))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("open deliveries of t1: %d %v\nwant %d %v", len(got), got, len(want), want)
	}
	pending, err := s.DeliveryList(ctx, store.DeliveryListParams{Space: "s", Trigger: "t1", Statuses: []store.DeliveryStatus{store.DeliveryPending}})
	if err != nil || len(pending) != 20 || pending[0].Seq != 15 {
		t.Fatalf("pending of t1: %d from %v, %v; want 20 from seq 15", len(pending), pending[:min(1, len(pending))], err)
	}
	done, err := s.DeliveryList(ctx, store.DeliveryListParams{Space: "s", Trigger: "t1", Statuses: []store.DeliveryStatus{"succeeded"}})
	if err != nil || len(done) != 240 {
		t.Fatalf("succeeded of t1: %d, %v; want 240", len(done), err)
	}
	// Migration 0018 indexed the closed deliveries already there.
	counts := map[store.DeliveryStatus]int{"succeeded": 240, "pending": 20, "running": 20, "retrying": 20}
	if st, err := s.DeliveryStats(ctx, "s", "t1"); err != nil || !maps.Equal(st.ByStatus, counts) {
		t.Fatalf("stats of t1: %v, %v; want %v", st.ByStatus, err, counts)
	}
}

// BenchmarkOpenDeliveries lists a trigger's open deliveries as the
// dispatcher loads them every poll (store.OpenDeliveryStatuses, pages of
// 1,000), for a trigger with 100,000 finished deliveries and its 100
// newest open: through deliveries_open (the listing since migration
// 0017) and, as the baseline, the same statement through
// deliveries_trigger (the listing before it, which walked every
// delivery the trigger ever had).
func BenchmarkOpenDeliveries(b *testing.B) {
	ctx := context.Background()
	s := storetest.Migrated(b, func(ctx context.Context) (*Store, error) {
		return Open(ctx, filepath.Join(b.TempDir(), "eddy.db"))
	})
	_, err := s.direct().ExecContext(ctx, `
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 100100)
INSERT INTO deliveries (`+deliveryCols+`)
SELECT 's', 'd' || n, 't', n, 'task', 'e' || n, CASE WHEN n > 100000 THEN 'pending' ELSE 'succeeded' END,
    1, 0, '', 0, n, n
FROM g`)
	if err != nil {
		b.Fatal(err)
	}
	p := store.DeliveryListParams{Space: "s", Trigger: "t", Statuses: store.OpenDeliveryStatuses, Limit: 1000}
	open := deliveryListQuery(&p)
	for _, tc := range []struct{ name, query string }{
		{"index=deliveries_trigger", strings.Replace(strings.Replace(open, "deliveries_open", "deliveries_trigger", 1),
			" AND "+openWhere, "", 1)},
		{"index=deliveries_open", open},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				rows, err := s.rquery(ctx, tc.query, p.Space, 0, "", p.Trigger, `["pending","running","retrying"]`, p.Limit)
				if err != nil {
					b.Fatal(err)
				}
				ds, err := collect(rows, scanDelivery)
				if err != nil || len(ds) != 100 {
					b.Fatalf("listed %d, %v; want 100", len(ds), err)
				}
			}
		})
	}
}

// BenchmarkDeliveryStats counts a trigger with 100,000 succeeded
// deliveries, 10 pending and 10 parked: the statement before migration
// 0018 (every delivery of the trigger read from the table) as the
// baseline, DeliveryStats (open ones through deliveries_open, the others
// from deliveries_stopped's entries) and DeliveryBacklog (the gauges':
// open and parked only).
func BenchmarkDeliveryStats(b *testing.B) {
	ctx := context.Background()
	s := fillDeliveries(b)
	const before = `SELECT status, count(*), min(created_at) FROM deliveries INDEXED BY deliveries_trigger
WHERE space = ? AND trigger = ? GROUP BY status`
	storetest.BenchDeliveryStats(b, func(q string) (store.DeliveryStats, error) {
		return s.deliveryStats(ctx, q, "s", "t")
	}, before, sqlDeliveryStats, sqlDeliveryBacklog)
}

// BenchmarkListParked lists a space's deliveries of some statuses as
// the console's Deliveries page and a bulk discard do (no trigger, pages
// of 100) among fillDeliveries' 100,000 succeeded ones: through
// deliveries_seq, the listing before this round, which walked every
// delivery of the space, and through the indexes of what they list
// (deliveries_stopped_seq for parked ones, deliveries_open for pending
// ones, both for a discard's statuses).
func BenchmarkListParked(b *testing.B) {
	ctx := context.Background()
	s := fillDeliveries(b)
	walk := deliveryListQuery(&store.DeliveryListParams{Statuses: []store.DeliveryStatus{store.DeliverySucceeded}})
	for _, tc := range []struct {
		name     string
		statuses []store.DeliveryStatus
		want     int
	}{
		{"parked", []store.DeliveryStatus{store.DeliveryParked}, 10},
		{"pending", []store.DeliveryStatus{store.DeliveryPending}, 10},
		{"discard", []store.DeliveryStatus{store.DeliveryPending, store.DeliveryRetrying, store.DeliveryFailed, store.DeliveryParked}, 20},
	} {
		p := store.DeliveryListParams{Space: "s", Statuses: tc.statuses, Limit: 100}
		statuses, err := rowcodec.EncodeStrings(tc.statuses)
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range []struct{ name, sql string }{{"deliveries_seq", walk}, {"backlog", deliveryListQuery(&p)}} {
			b.Run(fmt.Sprintf("status=%s/index=%s", tc.name, q.name), func(b *testing.B) {
				for b.Loop() {
					rows, err := s.rquery(ctx, q.sql, p.Space, 0, "", "", statuses, p.Limit)
					if err != nil {
						b.Fatal(err)
					}
					ds, err := collect(rows, scanDelivery)
					if err != nil || len(ds) != tc.want {
						b.Fatalf("listed %d, %v; want %d", len(ds), err, tc.want)
					}
				}
			})
		}
	}
}

// fillDeliveries opens a store whose trigger t of space s has 100,000
// succeeded deliveries, then 10 pending and 10 parked.
func fillDeliveries(b *testing.B) *Store {
	b.Helper()
	s := storetest.Migrated(b, func(ctx context.Context) (*Store, error) {
		return Open(ctx, filepath.Join(b.TempDir(), "eddy.db"))
	})
	_, err := s.direct().ExecContext(context.Background(), `
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 100020)
INSERT INTO deliveries (`+deliveryCols+`)
SELECT 's', 'd' || n, 't', n, 'task', 'e' || n,
    CASE WHEN n > 100010 THEN 'parked' WHEN n > 100000 THEN 'pending' ELSE 'succeeded' END,
    1, 0, '', 0, n, n
FROM g`)
	if err != nil {
		b.Fatal(err)
	}
	return s
}
