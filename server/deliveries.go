package server

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// deliveriesParams are the parameters of GET .../triggers/{name}/deliveries.
var deliveriesParams = []string{"status", "limit", "after"}

// listDeliveries answers GET .../triggers/{name}/deliveries with a page
// {"deliveries": [...], "next"?} of the trigger's deliveries, filtered by
// status (repeats or comma lists).
func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	space, name := r.PathValue("space"), r.PathValue("name")
	if err := s.seeDeliveries(r, space, name); err != nil {
		return err
	}
	q := r.URL.Query()
	if err := checkParamsSuggest(q, deliveriesParams, []string{"status"}, map[string]string{"statuses": "status"}); err != nil {
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
	if err := s.needEngine(); err != nil {
		return err
	}
	page, err := s.engine.Deliveries(r.Context(), engine.DeliveryQuery{
		Space: space, Trigger: name, Statuses: statuses, After: q.Get("after"), Limit: limit,
	})
	if err != nil {
		return err
	}
	if page.Deliveries == nil {
		page.Deliveries = []engine.DeliveryInfo{}
	}
	s.writeJSON(w, r, http.StatusOK, page)
	return nil
}

// seeDeliveries authorizes listing a trigger's deliveries: a trigger the
// principal may not see is not_found; one whose deliveries it may not see
// (auth's CanSeeDeliveries: they name entities and carry errors of every
// record the trigger matched) is forbidden.
func (s *Server) seeDeliveries(r *http.Request, space, name string) error {
	rd, err := s.readerFor(r, space, accessRead)
	if err != nil {
		return err
	}
	sc, err := s.scopesFor(r.Context(), rd, space)
	if err != nil {
		return err
	}
	scope := sc.triggerNamed(name)
	switch {
	case !rd.CanSeeDefinition(scope):
		return hiddenDefinition("trigger", name)
	case !rd.CanSeeDeliveries(scope):
		return forbidden("token may not see the deliveries of trigger %q: they name entities it may not read", name)
	}
	return nil
}

// checkDeliveryStatus refuses a status that is not a delivery status.
func checkDeliveryStatus(name, v string) error {
	if slices.Contains(store.DeliveryStatuses, store.DeliveryStatus(v)) {
		return nil
	}
	return problem.Param(name, "unknown delivery status %q (want %s)", v, joinStrings(store.DeliveryStatuses)).
		With("allowed", store.DeliveryStatuses)
}

// deliveryOp is one operator action on a delivery.
type deliveryOp func(ctx context.Context, space, id string) (engine.DeliveryInfo, error)

// retryDelivery answers POST .../deliveries/{id}/retry: a failed
// delivery is queued again with a fresh attempt budget.
func (s *Server) retryDelivery(w http.ResponseWriter, r *http.Request) error {
	return s.deliveryOperation(w, r, func(ctx context.Context, space, id string) (engine.DeliveryInfo, error) {
		return s.engine.Retry(ctx, space, id)
	})
}

// releaseDelivery answers POST .../deliveries/{id}/release: a parked
// delivery runs once more, past the causality cap.
func (s *Server) releaseDelivery(w http.ResponseWriter, r *http.Request) error {
	return s.deliveryOperation(w, r, func(ctx context.Context, space, id string) (engine.DeliveryInfo, error) {
		return s.engine.Release(ctx, space, id)
	})
}

// discardDelivery answers POST .../deliveries/{id}/discard: a delivery
// that has not succeeded is given up.
func (s *Server) discardDelivery(w http.ResponseWriter, r *http.Request) error {
	return s.deliveryOperation(w, r, func(ctx context.Context, space, id string) (engine.DeliveryInfo, error) {
		return s.engine.Discard(ctx, space, id)
	})
}

// deliveryOperation authorizes an admin, refuses a body other than
// nothing or {}, runs op and answers 200 with the delivery.
func (s *Server) deliveryOperation(w http.ResponseWriter, r *http.Request, op deliveryOp) error {
	space := r.PathValue("space")
	if err := s.manageDefinitions(r, space); err != nil {
		return err
	}
	if err := decodeOptional(r, &emptyBody{}); err != nil {
		return err
	}
	if err := s.needEngine(); err != nil {
		return err
	}
	d, err := op(r.Context(), space, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.setHead(w, r, space); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, d)
	return nil
}

// listValues splits a plural parameter's repeated, comma-separated
// values, ignoring empty items and repeats; check judges each value.
func listValues[S ~string](q url.Values, name string, check func(name, v string) error) ([]S, error) {
	var out []S
	for _, raw := range q[name] {
		for item := range strings.SplitSeq(raw, ",") {
			item = strings.TrimSpace(item)
			if item == "" || slices.Contains(out, S(item)) {
				continue
			}
			if check != nil {
				if err := check(name, item); err != nil {
					return nil, err
				}
			}
			out = append(out, S(item))
		}
	}
	return out, nil
}

// joinStrings joins values of a string type with ", ".
func joinStrings[S ~string](v []S) string {
	var b strings.Builder
	for i, s := range v {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(s))
	}
	return b.String()
}

// checkParamsSuggest is checkParams that first names the right spelling
// of a parameter given by a near miss (suggest maps it to the right one).
func checkParamsSuggest(q url.Values, allowed, repeatable []string, suggest map[string]string) error {
	for _, name := range slices.Sorted(mapKeys(q)) {
		if right, ok := suggest[name]; ok {
			return problem.Param(name, "unknown parameter; use %q", right).With("suggestion", right)
		}
	}
	return checkParams(q, allowed, repeatable)
}
