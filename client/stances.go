package client

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// Stances answers GET .../changes/{seq}/stances: every trigger's verdict
// on one row.
type Stances struct {
	Seq     int64    `json:"seq"`
	Stances []Stance `json:"stances"`
}

// Stance is one trigger's verdict: pending, not_started, disabled,
// not_matched, error (with Error), coalesced, echo, or matched (with its
// Delivery).
type Stance struct {
	Trigger  string          `json:"trigger"`
	Stance   string          `json:"stance"`
	Delivery *StanceDelivery `json:"delivery,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// StanceDelivery is the delivery a matched row got.
type StanceDelivery struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
}

// Stances returns every trigger's stance on the row seq.
func (s *Space) Stances(ctx context.Context, seq int64) (Stances, error) {
	var st Stances
	_, err := s.c.callJSON(ctx, get(s.path("changes", strconv.FormatInt(seq, 10), "stances"), nil), &st)
	return st, err
}

// Causes answers GET .../changes/{seq}/causes: the causal chain of a row,
// from the row itself to its root (depth 0) or a pruned cause; the seq of
// the chain's root write and the rows it has caused so far (RootRows);
// and the space's depth cap and causal budget.
type Causes struct {
	Seq      int64   `json:"seq"`
	Chain    []Cause `json:"chain"`
	Root     int64   `json:"root"`
	RootRows int64   `json:"rootRows"`
	Cap      int     `json:"cap"`
	Budget   int     `json:"budget"`
}

// Cause is one row of a causal chain. A delivery-authored row names its
// Trigger and Delivery; a Pruned cause (below the horizon) has only its
// Seq and ends the chain.
type Cause struct {
	Seq      int64  `json:"seq"`
	Depth    int    `json:"depth"`
	Trigger  string `json:"trigger,omitempty"`
	Delivery string `json:"delivery,omitempty"`
	Pruned   bool   `json:"pruned,omitempty"`
}

// Causes returns the causal chain of the row seq (admin or log:read).
func (s *Space) Causes(ctx context.Context, seq int64) (Causes, error) {
	var ch Causes
	_, err := s.c.callJSON(ctx, get(s.path("changes", strconv.FormatInt(seq, 10), "causes"), nil), &ch)
	return ch, err
}

// FenceParams select what a fence waits for.
type FenceParams struct {
	// Triggers to wait for (every enabled one when empty).
	Triggers []string
	// Timeout is how long the server waits, 0s to 60s (0: its default,
	// 5s).
	Timeout time.Duration
}

// FenceResult answers a fence: Done, or the triggers still Waiting
// when the timeout passed.
type FenceResult struct {
	Seq     int64    `json:"seq"`
	Done    bool     `json:"done"`
	Waiting []string `json:"waiting,omitempty"`
}

// Fence waits until the triggers have evaluated every row <= seq and
// every delivery those rows caused is terminal, or until the timeout
// (then Done is false): pass a write's Seq to wait for its side effects.
func (s *Space) Fence(ctx context.Context, seq int64, p FenceParams) (FenceResult, error) {
	q := url.Values{"seq": {strconv.FormatInt(seq, 10)}}
	for _, t := range p.Triggers {
		q.Add("triggers", t)
	}
	cl := get(s.path("fence"), q)
	cl.extra = 5 * time.Second // the server's default wait
	if p.Timeout > 0 {
		q.Set("timeout", p.Timeout.String())
		cl.extra = p.Timeout
	}
	var res FenceResult
	_, err := s.c.callJSON(ctx, cl, &res)
	return res, err
}
