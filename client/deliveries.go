package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"time"

	"github.com/eddy-run/eddy/store"
)

// Delivery statuses: pending → running → succeeded | retrying | failed,
// plus parked (over the causality cap) and discarded.
const (
	DeliveryPending   = string(store.DeliveryPending)
	DeliveryRunning   = string(store.DeliveryRunning)
	DeliverySucceeded = string(store.DeliverySucceeded)
	DeliveryRetrying  = string(store.DeliveryRetrying)
	DeliveryFailed    = string(store.DeliveryFailed)
	DeliveryParked    = string(store.DeliveryParked)
	DeliveryDiscarded = string(store.DeliveryDiscarded)
)

// Delivery is one delivery of a trigger: the row (Seq) and entity it
// was made for, its status and attempts, its causal depth and its last
// error.
type Delivery struct {
	ID            string     `json:"id"`
	Trigger       string     `json:"trigger"`
	Seq           int64      `json:"seq"`
	Entity        EntityKey  `json:"entity"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	Depth         int        `json:"depth"`
	LastError     string     `json:"lastError"`
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
	CreatedAt     time.Time  `json:"createdAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
}

// DeliveryPage is one page of a trigger's deliveries, ordered by the
// causing row's seq; Next, when set, is the After of the next page.
type DeliveryPage struct {
	Deliveries []Delivery `json:"deliveries"`
	Next       string     `json:"next,omitempty"`
}

// DeliveriesParams select a page of deliveries.
type DeliveriesParams struct {
	// Status keeps the deliveries with one of these statuses (all when
	// empty).
	Status []string
	Limit  int
	After  string
}

// Deliveries returns one page of the deliveries of trigger.
func (s *Space) Deliveries(ctx context.Context, trigger string, p DeliveriesParams) (DeliveryPage, error) {
	q := url.Values{}
	for _, st := range p.Status {
		q.Add("status", st)
	}
	setLimit(q, p.Limit)
	if p.After != "" {
		q.Set("after", p.After)
	}
	var page DeliveryPage
	_, err := s.c.callJSON(ctx, get(s.path("triggers", trigger, "deliveries"), q), &page)
	return page, err
}

// DeliveryPages walks every page of the deliveries of trigger.
func (s *Space) DeliveryPages(ctx context.Context, trigger string, p DeliveriesParams) iter.Seq2[DeliveryPage, error] {
	return func(yield func(DeliveryPage, error) bool) {
		for {
			page, err := s.Deliveries(ctx, trigger, p)
			if !yield(page, err) || err != nil || page.Next == "" {
				return
			}
			p.After = page.Next
		}
	}
}

// RetryDelivery queues a failed delivery again with a fresh attempt
// budget (409 conflict with details.status from another status).
func (s *Space) RetryDelivery(ctx context.Context, id string) (Delivery, error) {
	return s.deliveryOp(ctx, id, "retry")
}

// ReleaseDelivery runs a parked delivery once more, past the causality
// cap.
func (s *Space) ReleaseDelivery(ctx context.Context, id string) (Delivery, error) {
	return s.deliveryOp(ctx, id, "release")
}

// DiscardDelivery gives up a delivery that has not succeeded.
func (s *Space) DiscardDelivery(ctx context.Context, id string) (Delivery, error) {
	return s.deliveryOp(ctx, id, "discard")
}

func (s *Space) deliveryOp(ctx context.Context, id, op string) (Delivery, error) {
	var d Delivery
	_, err := s.c.callJSON(ctx, send(http.MethodPost, s.path("deliveries", id, op), nil), &d)
	return d, err
}

// BulkParams select deliveries for a bulk retry, release or discard.
type BulkParams struct {
	// Action is "retry", "release" or "discard".
	Action string `json:"action"`
	// Trigger keeps one trigger's deliveries ("" for every trigger's).
	Trigger string `json:"trigger,omitempty"`
	// Status keeps the deliveries with one of these statuses.
	Status []string `json:"status,omitempty"`
	// When is a CEL expression over the causing row.
	When string `json:"when,omitempty"`
	// DryRun only counts (and samples) the matching deliveries.
	DryRun bool `json:"dryRun,omitempty"`
	// Expect acts only if exactly this many match (else 409 conflict
	// with details.matched, nothing done): confirm a dry run's count.
	Expect *int `json:"expect,omitempty"`
}

// BulkResult says what a bulk operation matched and did.
type BulkResult struct {
	Action  string `json:"action"`
	DryRun  bool   `json:"dryRun"`
	Matched int    `json:"matched"`
	// More is true when more deliveries matched than one call takes.
	More    bool `json:"more"`
	Done    int  `json:"done"`
	Skipped int  `json:"skipped"`
	// Sample (dry run) is the first deliveries it would act on.
	Sample []Delivery `json:"sample,omitempty"`
	// Errors names the first skipped deliveries and why.
	Errors []BulkError `json:"errors,omitempty"`
}

// BulkError is one delivery a bulk operation skipped.
type BulkError struct {
	ID    string     `json:"id"`
	Error *BulkCause `json:"error"`
}

// BulkCause is why a delivery was skipped: a problem object.
type BulkCause struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// BulkDeliveries retries, releases or discards every delivery that
// matches p, parked chains first (POST .../deliveries/bulk). A dry run
// is retried like a GET.
func (s *Space) BulkDeliveries(ctx context.Context, p BulkParams) (BulkResult, error) {
	cl := send(http.MethodPost, s.path("deliveries", "bulk"), p)
	cl.retry = p.DryRun
	var r BulkResult
	_, err := s.c.callJSON(ctx, cl, &r)
	return r, err
}
