package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Bounds of one bulk operation.
const (
	// maxBulk is how many deliveries one bulk operation acts on; more
	// matches answer more: true (run it again).
	maxBulk = 10_000
	// maxBulkScan bounds the deliveries one bulk operation examines.
	maxBulkScan = 100_000
	// bulkReport is how many deliveries a dry run shows and how many
	// skipped ones an answer names.
	bulkReport = 20
)

// bulkAction is one operator action and the statuses it applies to.
type bulkAction struct {
	from []store.DeliveryStatus
	op   deliveryOp
}

// bulkActions are the actions of POST .../deliveries/bulk.
func (s *Server) bulkActions() map[string]bulkAction {
	return map[string]bulkAction{
		"retry":   {engine.RetryFrom, s.engine.Retry},
		"release": {engine.ReleaseFrom, s.engine.Release},
		"discard": {engine.DiscardFrom, s.engine.Discard},
	}
}

// bulkBody is the body of POST .../deliveries/bulk.
type bulkBody struct {
	Action  string                 `json:"action"`
	Trigger string                 `json:"trigger"`
	Status  []store.DeliveryStatus `json:"status"`
	When    string                 `json:"when"`
	DryRun  bool                   `json:"dryRun"`
	Expect  *int                   `json:"expect"`
}

// bulkAnswer says what a bulk operation matched and did.
type bulkAnswer struct {
	Action  string `json:"action"`
	DryRun  bool   `json:"dryRun"`
	Matched int    `json:"matched"`
	// More is true when more deliveries matched than one operation takes.
	More    bool `json:"more"`
	Done    int  `json:"done"`
	Skipped int  `json:"skipped"`
	// Sample (dry run) is the first deliveries it would act on, in order.
	Sample []engine.DeliveryInfo `json:"sample,omitempty"`
	// Errors names the first skipped deliveries and why.
	Errors []bulkError `json:"errors,omitempty"`
}

// bulkError is one delivery a bulk operation skipped.
type bulkError struct {
	ID    string         `json:"id"`
	Error *problem.Error `json:"error"`
}

// bulkDeliveries answers POST .../deliveries/bulk: retry, release or
// discard every delivery that matches (trigger, status, when over the
// row), parked chains first. With dryRun it only counts; with expect it
// acts only if the count is still expect (else 409 conflict with
// details.matched, nothing done), so a console confirms the number it
// showed. Each delivery goes through the one-delivery operation; one that
// moved on meanwhile is skipped, not an error.
func (s *Server) bulkDeliveries(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	rd, err := s.readerFor(r, space, accessAdmin)
	if err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	if err := s.needEngine(); err != nil {
		return err
	}
	var body bulkBody
	if err := decodeJSON(r, &body, true); err != nil {
		return err
	}
	action, passes, err := s.bulkPlan(&body)
	if err != nil {
		return err
	}
	m, err := s.newDeliveryMatcher(r.Context(), rd, space, "when", body.When)
	if err != nil {
		return err
	}
	matches, more, err := s.bulkMatches(r.Context(), m, engine.DeliveryQuery{Space: space, Trigger: body.Trigger}, passes)
	if err != nil {
		return err
	}
	out := bulkAnswer{Action: body.Action, DryRun: body.DryRun, Matched: len(matches), More: more}
	switch {
	case body.DryRun:
		out.Sample = matches[:min(len(matches), bulkReport)]
	case body.Expect != nil && *body.Expect != len(matches):
		return problem.New(problem.Conflict, "%d deliveries match now, not the %d expected: nothing was done", len(matches), *body.Expect).
			With("matched", len(matches))
	default:
		if err := s.bulkApply(r.Context(), space, action, matches, &out); err != nil {
			return err
		}
	}
	if err := s.setHead(w, r, space); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, out)
	return nil
}

// bulkPlan checks a body and returns its action and the statuses it acts
// on, as listing passes (parkedFirst): those of the action, narrowed to
// the body's status when given.
func (s *Server) bulkPlan(b *bulkBody) (bulkAction, [][]store.DeliveryStatus, error) {
	actions := s.bulkActions()
	action, ok := actions[b.Action]
	if !ok {
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range actions {
				if !yield(k) {
					return
				}
			}
		})
		return bulkAction{}, nil, badRequest("action: %q is not a delivery action (want %s)", b.Action, strings.Join(names, ", ")).
			With("field", "action").With("allowed", names)
	}
	for _, st := range b.Status {
		if err := checkDeliveryStatus("status", string(st)); err != nil {
			return bulkAction{}, nil, badRequest("status: unknown delivery status %q", st).With("field", "status")
		}
	}
	statuses := action.from
	if len(b.Status) > 0 {
		statuses = slices.DeleteFunc(slices.Clone(action.from), func(st store.DeliveryStatus) bool { return !slices.Contains(b.Status, st) })
	}
	if len(statuses) == 0 {
		return bulkAction{}, nil, badRequest("status: %s applies to %s deliveries, not %s", b.Action,
			joinStrings(action.from), joinStrings(b.Status)).With("field", "status").With("allowed", action.from)
	}
	return action, parkedFirst(statuses), nil
}

// parkedFirst orders statuses so that parked chains come first: each
// element is the statuses of one listing pass.
func parkedFirst(statuses []store.DeliveryStatus) [][]store.DeliveryStatus {
	var passes [][]store.DeliveryStatus
	if slices.Contains(statuses, store.DeliveryParked) {
		passes = append(passes, []store.DeliveryStatus{store.DeliveryParked})
	}
	rest := slices.DeleteFunc(slices.Clone(statuses), func(st store.DeliveryStatus) bool { return st == store.DeliveryParked })
	if len(rest) > 0 {
		passes = append(passes, rest)
	}
	return passes
}

// bulkMatches lists the matching deliveries, pass by pass, at most
// maxBulk (more reports that others matched or were not examined).
func (s *Server) bulkMatches(ctx context.Context, m *deliveryMatcher, dq engine.DeliveryQuery, passes [][]store.DeliveryStatus) ([]engine.DeliveryInfo, bool, error) {
	var out []engine.DeliveryInfo
	scanned := 0
	for _, statuses := range passes {
		dq.Statuses, dq.After = statuses, ""
		for {
			dq.Limit = maxLimit
			page, err := s.engine.Deliveries(ctx, dq)
			if err != nil {
				return nil, false, err
			}
			for i := range page.Deliveries {
				ok, err := m.match(ctx, &page.Deliveries[i])
				if err != nil {
					return nil, false, err
				}
				if ok && len(out) == maxBulk {
					return out, true, nil
				}
				if ok {
					out = append(out, page.Deliveries[i])
				}
			}
			scanned += len(page.Deliveries)
			if page.Next == "" {
				break
			}
			if scanned >= maxBulkScan {
				return out, true, nil
			}
			dq.After = page.Next
		}
	}
	return out, false, nil
}

// bulkApply runs the action on each match in order. A delivery the
// operation refuses (it moved on, or its trigger is gone) is skipped;
// any other failure stops the operation with what it did so far
// unreported, like any failed request.
func (s *Server) bulkApply(ctx context.Context, space string, action bulkAction, matches []engine.DeliveryInfo, out *bulkAnswer) error {
	for _, d := range matches {
		_, err := action.op(ctx, space, d.ID)
		var pe *problem.Error
		switch {
		case err == nil:
			out.Done++
		case errors.As(err, &pe) && (pe.Code == problem.Conflict || pe.Code == problem.NotFound):
			out.Skipped++
			if len(out.Errors) < bulkReport {
				out.Errors = append(out.Errors, bulkError{ID: d.ID, Error: pe})
			}
		default:
			return err
		}
	}
	return nil
}
