package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eddy-run/eddy/store"
)

// DeliveryGet returns a delivery or store.ErrNotFound.
func (s *Store) DeliveryGet(ctx context.Context, space, id string) (store.Delivery, error) {
	const q = "SELECT " + deliveryColumns + " FROM deliveries WHERE space = $1 AND id = $2"
	d, err := scanDelivery(s.pool.QueryRow(ctx, q, space, id))
	return d, wrap("get delivery", err)
}

// DeliveryList lists a space's deliveries ordered by (seq, id) after
// p.After, optionally of one trigger and of some statuses.
func (s *Store) DeliveryList(ctx context.Context, p store.DeliveryListParams) ([]store.Delivery, error) {
	q, args := deliveryListQuery(p)
	return s.queryDeliveries(ctx, "list deliveries", q, args...)
}

// deliveryListQuery builds the listing statement of p. Each filter adds
// its condition only when set, so every variant's cached plan can use the
// index that fits it; a filter on open statuses only also names them
// literally, which lets the planner use the partial index of open
// deliveries, one on stopped statuses only spells the condition of the
// partial indexes of stopped ones, and one on both kinds (a bulk
// discard) spells both, so the planner can read the two kinds of partial
// index and leave the succeeded deliveries alone.
func deliveryListQuery(p store.DeliveryListParams) (string, []any) {
	var b strings.Builder
	b.WriteString("SELECT " + deliveryColumns + ` FROM deliveries
		WHERE space = $1 AND (seq, id) > ($2, $3::text)`)
	args := []any{p.Space, p.After.Seq, p.After.ID, limitArg(p.Limit)}
	if p.Trigger != "" {
		args = append(args, p.Trigger)
		fmt.Fprintf(&b, " AND trigger = $%d", len(args))
	}
	if len(p.Statuses) > 0 {
		args = append(args, texts(p.Statuses))
		fmt.Fprintf(&b, " AND status = ANY($%d::text[])", len(args))
		if store.OnlyOpen(p.Statuses) {
			b.WriteString(" AND status IN " + openStatusesSQL)
		} else if store.OnlyStopped(p.Statuses) {
			b.WriteString(" AND " + stoppedWhereSQL)
		} else if !slices.Contains(p.Statuses, store.DeliverySucceeded) {
			b.WriteString(" AND (status IN " + openStatusesSQL + " OR " + stoppedWhereSQL + ")")
		}
	}
	b.WriteString(" ORDER BY seq, id LIMIT $4")
	return b.String(), args
}

// DeliveriesAt returns the deliveries caused by the row seq, ordered by
// trigger then creation.
func (s *Store) DeliveriesAt(ctx context.Context, space string, seq int64) ([]store.Delivery, error) {
	const q = "SELECT " + deliveryColumns + ` FROM deliveries WHERE space = $1 AND seq = $2
		ORDER BY trigger, created_at, id`
	return s.queryDeliveries(ctx, "deliveries at", q, space, seq)
}

// queryDeliveries runs a query selecting deliveryColumns.
func (s *Store) queryDeliveries(ctx context.Context, op, q string, args ...any) ([]store.Delivery, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Delivery, error) { return scanDelivery(r) })
	if out == nil {
		out = []store.Delivery{}
	}
	return out, wrap(op, err)
}

// DeliveryUpdate applies u in one statement and returns the updated
// delivery; store.ErrNotFound if there is none, an error wrapping
// store.ErrFenced if its status or its trigger's epoch did not match.
func (s *Store) DeliveryUpdate(ctx context.Context, u store.DeliveryUpdate) (store.Delivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, deliveryUpdateQ, updateArgs(u, s.nowMicro())...))
	if err == nil {
		return d, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.Delivery{}, wrap("update delivery", err)
	}
	// Nothing changed: tell a missing delivery from a fenced one.
	if _, err := s.DeliveryGet(ctx, u.Space, u.ID); err != nil {
		return store.Delivery{}, fmt.Errorf("postgres: update delivery: %w", err)
	}
	return store.Delivery{}, fenced("update delivery", "delivery "+u.ID)
}

// DeliveryStats counts a trigger's deliveries by status and finds the
// creation time of its oldest open one, in one statement.
func (s *Store) DeliveryStats(ctx context.Context, space, trigger string) (store.DeliveryStats, error) {
	return s.deliveryStats(ctx, deliveryStatsSQL, space, trigger)
}

// DeliveryBacklog counts a trigger's open deliveries by status and its
// parked ones, and finds the creation time of its oldest open one.
func (s *Store) DeliveryBacklog(ctx context.Context, space, trigger string) (store.DeliveryStats, error) {
	return s.deliveryStats(ctx, deliveryBacklogSQL, space, trigger)
}

// The statements of DeliveryStats and DeliveryBacklog: the open
// deliveries by status (deliveries_open_idx) and the stopped ones
// (deliveries_stopped_idx; all of them, or the parked ones); the stats
// add the count of all the trigger's deliveries (the row of status ""), which
// leaves the succeeded ones.
const (
	openStatsSQL = `SELECT status, count(*), min(created_at) FROM deliveries
		WHERE space = $1 AND trigger = $2 AND status IN ` + openStatusesSQL + ` GROUP BY status`
	stoppedStatsSQL = `
		UNION ALL SELECT status, count(*), NULL FROM deliveries
		WHERE space = $1 AND trigger = $2 AND ` + stoppedWhereSQL
	deliveryStatsSQL = openStatsSQL + stoppedStatsSQL + ` GROUP BY status
		UNION ALL SELECT '', count(*), NULL FROM deliveries WHERE space = $1 AND trigger = $2`
	deliveryBacklogSQL = openStatsSQL + stoppedStatsSQL + ` AND status = 'parked' GROUP BY status`
)

// deliveryStats runs q, a statement answering (status, count, oldest
// creation) rows, for one trigger.
func (s *Store) deliveryStats(ctx context.Context, q, space, trigger string) (store.DeliveryStats, error) {
	out := store.DeliveryStats{ByStatus: map[store.DeliveryStatus]int{}}
	rows, err := s.pool.Query(ctx, q, space, trigger)
	if err != nil {
		return store.DeliveryStats{}, wrap("delivery stats", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			status store.DeliveryStatus
			n      int64
			oldest *time.Time
		)
		if err := rows.Scan(&status, &n, &oldest); err != nil {
			return store.DeliveryStats{}, wrap("delivery stats", err)
		}
		out.Add(status, int(n), fromOptTime(oldest))
	}
	if err := rows.Err(); err != nil {
		return store.DeliveryStats{}, wrap("delivery stats", err)
	}
	out.Settle()
	return out, nil
}

// DeliveriesOpenThrough counts a trigger's open deliveries caused by rows
// with seq <= through.
func (s *Store) DeliveriesOpenThrough(ctx context.Context, space, trigger string, through int64) (int, error) {
	const q = `SELECT count(*) FROM deliveries WHERE space = $1 AND trigger = $2 AND seq <= $3
		AND status IN ` + openStatusesSQL
	var n int64
	err := s.pool.QueryRow(ctx, q, space, trigger, through).Scan(&n)
	return int(n), wrap("open deliveries", err)
}

// StanceErrorsAt returns the filter errors recorded for the row seq, by
// trigger.
func (s *Store) StanceErrorsAt(ctx context.Context, space string, seq int64) (map[string]string, error) {
	const q = "SELECT trigger, error FROM stance_errors WHERE space = $1 AND seq = $2"
	rows, err := s.pool.Query(ctx, q, space, seq)
	if err != nil {
		return nil, wrap("stance errors", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var trigger, msg string
		if err := rows.Scan(&trigger, &msg); err != nil {
			return nil, wrap("stance errors", err)
		}
		out[trigger] = msg
	}
	return out, wrap("stance errors", rows.Err())
}

// DeliveryUpdateMany applies several updates in one transaction sent as
// one pipelined batch, committed without waiting for its WAL flush
// (SET LOCAL synchronous_commit); an update that matched no row is then
// told apart as missing or fenced, and fails alone. The updates go out
// in order as set-based statements (deliveryUpdateSetQ), one per run of
// updates naming each delivery once (updateRuns); a run of one goes out
// as DeliveryUpdate's statement.
func (s *Store) DeliveryUpdateMany(ctx context.Context, us []store.DeliveryUpdate) ([]error, error) {
	errs := make([]error, len(us))
	if len(us) == 0 {
		return errs, nil
	}
	now := s.nowMicro()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit TO off")
	missed := make([]bool, len(us))
	for _, run := range updateRuns(us) {
		if len(run) == 1 {
			queueUpdate(b, us[run[0]], now, &missed[run[0]])
			continue
		}
		var u updateBuf
		for _, i := range run {
			u.add(us[i])
		}
		b.Queue(deliveryUpdateSetQ, u.args(now)...).Query(func(rows pgx.Rows) error {
			done := make(map[deliveryKey]bool, len(run))
			for rows.Next() {
				var k deliveryKey
				if err := rows.Scan(&k.space, &k.id); err != nil {
					return err
				}
				done[k] = true
			}
			for _, i := range run {
				missed[i] = !done[deliveryKey{us[i].Space, us[i].ID}]
			}
			return rows.Err()
		})
	}
	b.Queue("COMMIT")
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, wrap("update deliveries", err)
	}
	defer conn.Release()
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		// Leave no transaction open on the pooled connection.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		return nil, wrap("update deliveries", err)
	}
	for i, miss := range missed {
		if !miss {
			continue
		}
		if _, err := s.DeliveryGet(ctx, us[i].Space, us[i].ID); err != nil {
			errs[i] = fmt.Errorf("postgres: update delivery: %w", err)
		} else {
			errs[i] = fenced("update delivery", "delivery "+us[i].ID)
		}
	}
	return errs, nil
}

// queueUpdate adds u alone to b (deliveryUpdateQ); *missed is set when it
// updated nothing.
func queueUpdate(b *pgx.Batch, u store.DeliveryUpdate, now time.Time, missed *bool) {
	b.Queue(deliveryUpdateQ, updateArgs(u, now)...).Query(func(rows pgx.Rows) error {
		n := 0
		for rows.Next() {
			n++
		}
		*missed = n == 0
		return rows.Err()
	})
}

// deliveryKey names one delivery.
type deliveryKey struct{ space, id string }

// updateRuns splits us, in order, into runs (indexes into us) in which
// no delivery is named twice: one set-based statement updates a row
// once, so a second update of the same delivery starts the next run.
func updateRuns(us []store.DeliveryUpdate) [][]int {
	var runs [][]int
	var run []int
	seen := map[deliveryKey]bool{}
	for i, u := range us {
		k := deliveryKey{u.Space, u.ID}
		if seen[k] {
			runs = append(runs, run)
			run, seen = nil, map[deliveryKey]bool{}
		}
		seen[k] = true
		run = append(run, i)
	}
	return append(runs, run)
}
