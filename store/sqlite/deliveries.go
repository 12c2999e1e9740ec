package sqlite

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// DeliveryGet returns a delivery or ErrNotFound.
func (s *Store) DeliveryGet(ctx context.Context, space, id string) (store.Delivery, error) {
	row, err := s.rqueryRow(ctx, sqlDeliveryGet, space, id)
	if err != nil {
		return store.Delivery{}, wrap("get delivery", err)
	}
	d, err := scanDelivery(row)
	return d, wrap("get delivery", err)
}

// DeliveryList lists a space's deliveries ordered by (seq, id) after
// p.After, at most p.Limit (no limit when it is <= 0), of p.Trigger and
// with one of p.Statuses when they are set.
func (s *Store) DeliveryList(ctx context.Context, p store.DeliveryListParams) ([]store.Delivery, error) {
	statuses, err := rowcodec.EncodeStrings(p.Statuses)
	if err != nil {
		return nil, wrap("list deliveries: encode", err)
	}
	rows, err := s.rquery(ctx, deliveryListQuery(&p), p.Space, p.After.Seq, p.After.ID, p.Trigger,
		statuses, limitArg(p.Limit))
	if err != nil {
		return nil, wrap("list deliveries", err)
	}
	out, err := collect(rows, scanDelivery)
	return out, wrap("list deliveries", err)
}

// deliveryListQuery is the listing statement for p's filters. Each shape
// reads the index that holds what it lists, so a listing costs what it
// can return, not the space's history:
//   - a trigger's open deliveries: deliveries_open, in order;
//   - a trigger's deliveries of one stopped status: deliveries_stopped,
//     in order;
//   - stopped statuses only: deliveries_stopped_seq, in order;
//   - open statuses only, across triggers: deliveries_open, sorted;
//   - open and stopped statuses, not succeeded: both, merged and sorted
//     (a bulk discard);
//   - a trigger's others: deliveries_trigger; the rest: deliveries_seq.
func deliveryListQuery(p *store.DeliveryListParams) string {
	var b strings.Builder
	for i, from := range deliverySources(p) {
		if i > 0 {
			b.WriteString("\nUNION ALL ")
		}
		b.WriteString(`SELECT ` + deliveryCols + ` FROM deliveries INDEXED BY ` + from + ` (seq, id) > (?2, ?3)`)
		if len(p.Statuses) > 0 {
			b.WriteString(` AND status IN (SELECT value FROM json_each(?5))`)
		}
	}
	b.WriteString(` ORDER BY seq, id LIMIT ?6`)
	return b.String()
}

// deliverySources returns the index and conditions (ending in AND) of
// each part of p's listing: one, or two whose union is sorted.
func deliverySources(p *store.DeliveryListParams) []string {
	trigger := ""
	if p.Trigger != "" {
		trigger = ` AND trigger = ?4`
	}
	open := `deliveries_open WHERE space = ?1` + trigger + ` AND ` + openWhere + ` AND`
	stoppedSeq := `deliveries_stopped_seq WHERE space = ?1` + trigger + ` AND ` + stoppedWhere + ` AND`
	_, oneStopped := store.OneStopped(p.Statuses)
	switch {
	case store.OnlyOpen(p.Statuses):
		return []string{open}
	case p.Trigger != "" && oneStopped:
		return []string{`deliveries_stopped WHERE space = ?1 AND trigger = ?4 AND ` + stoppedWhere +
			` AND status = json_extract(?5, '$[0]') AND`}
	case store.OnlyStopped(p.Statuses):
		return []string{stoppedSeq}
	case len(p.Statuses) > 0 && !slices.Contains(p.Statuses, store.DeliverySucceeded):
		return []string{open, stoppedSeq}
	case p.Trigger != "":
		return []string{`deliveries_trigger WHERE space = ?1 AND trigger = ?4 AND`}
	default:
		return []string{`deliveries_seq WHERE space = ?1 AND`}
	}
}

// DeliveriesAt returns every delivery caused by the row seq, ordered by
// trigger, then creation time, then id.
func (s *Store) DeliveriesAt(ctx context.Context, space string, seq int64) ([]store.Delivery, error) {
	rows, err := s.rquery(ctx, sqlDeliveriesAt, space, seq)
	if err != nil {
		return nil, wrap("deliveries at", err)
	}
	out, err := collect(rows, scanDelivery)
	return out, wrap("deliveries at", err)
}

// DeliveryUpdate applies u (see store.DeliveryUpdate) and returns the
// updated delivery: ErrNotFound if there is none, an error wrapping
// ErrFenced if its status or its trigger's epoch did not match.
func (s *Store) DeliveryUpdate(ctx context.Context, u store.DeliveryUpdate) (store.Delivery, error) {
	var out store.Delivery
	err := s.triggerWrite(ctx, func(q stmter) error {
		var err error
		out, err = updateDelivery(ctx, q, &u)
		return err
	})
	return out, wrap("update delivery", err)
}

// DeliveryStats counts a trigger's deliveries by status and finds the
// creation time of its oldest open one.
func (s *Store) DeliveryStats(ctx context.Context, space, trigger string) (store.DeliveryStats, error) {
	return s.deliveryStats(ctx, sqlDeliveryStats, space, trigger)
}

// DeliveryBacklog counts a trigger's open deliveries by status and its
// parked ones, and finds the creation time of its oldest open one.
func (s *Store) DeliveryBacklog(ctx context.Context, space, trigger string) (store.DeliveryStats, error) {
	return s.deliveryStats(ctx, sqlDeliveryBacklog, space, trigger)
}

// deliveryStats runs q, a statement answering (status, count, oldest
// creation) rows, for one trigger.
func (s *Store) deliveryStats(ctx context.Context, q, space, trigger string) (store.DeliveryStats, error) {
	st := store.DeliveryStats{ByStatus: map[store.DeliveryStatus]int{}}
	rows, err := s.rquery(ctx, q, space, trigger)
	if err != nil {
		return st, wrap("delivery stats", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			status store.DeliveryStatus
			n      int
			oldest int64
		)
		if err := rows.Scan(&status, &n, &oldest); err != nil {
			return st, wrap("delivery stats", err)
		}
		st.Add(status, n, fromMicros(oldest))
	}
	st.Settle()
	return st, wrap("delivery stats", rows.Err())
}

// DeliveriesOpenThrough counts a trigger's open deliveries caused by rows
// with seq <= through.
func (s *Store) DeliveriesOpenThrough(ctx context.Context, space, trigger string, through int64) (int, error) {
	row, err := s.rqueryRow(ctx, sqlOpenThrough, space, trigger, through)
	if err != nil {
		return 0, wrap("open deliveries", err)
	}
	var n int
	return n, wrap("open deliveries", row.Scan(&n))
}

// StanceErrorsAt returns the stance errors recorded for the row seq, by
// trigger (an empty map when there are none).
func (s *Store) StanceErrorsAt(ctx context.Context, space string, seq int64) (map[string]string, error) {
	rows, err := s.rquery(ctx, sqlErrorsAt, space, seq)
	if err != nil {
		return nil, wrap("stance errors at", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var trigger, msg string
		if err := rows.Scan(&trigger, &msg); err != nil {
			return nil, wrap("stance errors at", err)
		}
		out[trigger] = msg
	}
	return out, wrap("stance errors at", rows.Err())
}

// DeliveryUpdateMany applies several updates in one write transaction,
// committed without an fsync of its own (lazyWriteTx); a fenced or
// missing delivery fails only its own update.
func (s *Store) DeliveryUpdateMany(ctx context.Context, us []store.DeliveryUpdate) ([]error, error) {
	var errs []error
	err := s.lazyWriteTx(ctx, func(q *connTx) (err error) {
		errs, err = completeEach(ctx, q, us)
		return err
	})
	if err != nil {
		return nil, wrap("update deliveries", err)
	}
	return errs, nil
}

// completeEach applies each of us in q on its own terms: a fenced or
// missing delivery is that update's outcome; any other error stops them.
func completeEach(ctx context.Context, q stmter, us []store.DeliveryUpdate) ([]error, error) {
	errs := make([]error, len(us))
	for i := range us {
		err := completeDelivery(ctx, q, &us[i])
		if err != nil && !errors.Is(err, store.ErrFenced) && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		errs[i] = err
	}
	return errs, nil
}
