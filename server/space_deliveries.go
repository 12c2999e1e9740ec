package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/store"
)

// spaceDeliveriesParams are the parameters of GET .../deliveries.
var spaceDeliveriesParams = []string{"trigger", "status", "when", "limit", "after"}

// maxDeliveryScan bounds how many deliveries one filtered page examines:
// a when that matches nothing still answers in bounded time.
const maxDeliveryScan = 10_000

// deliveryMatcher decides which deliveries a request shows: those of
// triggers whose deliveries the reader may see (auth's CanSeeDeliveries)
// and, with a when, whose row it matches.
type deliveryMatcher struct {
	s      *Server
	rd     *auth.Reader
	scopes *definitionScopes
	space  string
	when   *predicate.Row
	ev     *predicate.Eval      // when's evaluator for this request, made on first use
	rows   map[int64]*store.Row // by seq; nil when pruned
}

// newDeliveryMatcher compiles when (param names it in errors; "" matches
// every row).
func (s *Server) newDeliveryMatcher(ctx context.Context, rd *auth.Reader, space, param, when string) (*deliveryMatcher, error) {
	m := &deliveryMatcher{s: s, rd: rd, space: space, rows: map[int64]*store.Row{}}
	if when != "" {
		prg, err := predicate.CompileRow(param, when)
		if err != nil {
			return nil, err
		}
		m.when = prg
	}
	sc, err := s.scopesFor(ctx, rd, space)
	if err != nil {
		return nil, err
	}
	m.scopes = sc
	return m, nil
}

// match reports whether d is shown. when reads the row, and a pruned row
// matches no when.
func (m *deliveryMatcher) match(ctx context.Context, d *engine.DeliveryInfo) (bool, error) {
	if !m.rd.CanSeeDeliveries(m.scopes.triggerNamed(d.Trigger)) {
		return false, nil
	}
	if m.when == nil {
		return true, nil
	}
	row, err := m.row(ctx, d.Seq)
	if err != nil || row == nil {
		return false, err
	}
	if m.ev == nil {
		m.ev = m.when.Evaluator(ctx, m.s.whenBudget)
	}
	ok := m.ev.Allow(row)
	return ok, m.ev.Err()
}

// row reads the wire row seq once per request (nil when pruned).
func (m *deliveryMatcher) row(ctx context.Context, seq int64) (*store.Row, error) {
	if r, ok := m.rows[seq]; ok {
		return r, nil
	}
	rows, err := m.s.log.Store().Rows(ctx, store.RowsParams{Space: m.space, Lo: seq - 1, Hi: seq, Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("read row %d: %w", seq, err)
	}
	var r *store.Row
	if len(rows) == 1 {
		r = &rows[0]
	}
	m.rows[seq] = r
	return r, nil
}

// listSpaceDeliveries answers GET .../deliveries: a page {"deliveries":
// [...], "next"?} of the space's deliveries of every trigger (or one,
// trigger=), by status (repeats or comma lists) and a when CEL filter
// over each delivery's row. A filtered page examines at most 10,000
// deliveries and may be short, even empty, with a next: only an omitted
// next is the end.
func (s *Server) listSpaceDeliveries(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	rd, err := s.readerFor(r, space, accessRead)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if err := checkParamsSuggest(q, spaceDeliveriesParams, []string{"status"},
		map[string]string{"statuses": "status", "triggers": "trigger"}); err != nil {
		return err
	}
	statuses, err := listValues[store.DeliveryStatus](q, "status", checkDeliveryStatus)
	if err != nil {
		return err
	}
	limit, err := limitParam(q)
	if err != nil {
		return err
	}
	m, err := s.newDeliveryMatcher(r.Context(), rd, space, "when", q.Get("when"))
	if err != nil {
		return err
	}
	if err := s.needEngine(); err != nil {
		return err
	}
	page, err := s.matchingPage(r.Context(), m, deliveryFilter(space, q, statuses), limit)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, page)
	return nil
}

// deliveryFilter is the engine query of a listing's parameters.
func deliveryFilter(space string, q url.Values, statuses []store.DeliveryStatus) engine.DeliveryQuery {
	return engine.DeliveryQuery{Space: space, Trigger: q.Get("trigger"), Statuses: statuses, After: q.Get("after")}
}

// matchingPage reads engine pages from dq.After until limit deliveries
// matched, the listing ended or maxDeliveryScan were examined. Each
// engine page asks only for the deliveries still missing, so a page ends
// on a position the engine can resume from.
func (s *Server) matchingPage(ctx context.Context, m *deliveryMatcher, dq engine.DeliveryQuery, limit int) (engine.DeliveryPage, error) {
	out := engine.DeliveryPage{Deliveries: []engine.DeliveryInfo{}}
	for scanned := 0; ; {
		dq.Limit = limit - len(out.Deliveries)
		page, err := s.engine.Deliveries(ctx, dq)
		if err != nil {
			return engine.DeliveryPage{}, err
		}
		for i := range page.Deliveries {
			ok, err := m.match(ctx, &page.Deliveries[i])
			if err != nil {
				return engine.DeliveryPage{}, err
			}
			if ok {
				out.Deliveries = append(out.Deliveries, page.Deliveries[i])
			}
		}
		scanned += len(page.Deliveries)
		out.Next, dq.After = page.Next, page.Next
		if page.Next == "" || len(out.Deliveries) == limit || scanned >= maxDeliveryScan {
			return out, nil
		}
	}
}
