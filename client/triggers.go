package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/eddy-run/eddy/store"
)

// Trigger is a trigger definition: the body of PUT .../triggers/{name}
// and, with every default filled in, what GET answers. Fields left zero
// take the server's defaults.
type Trigger struct {
	// Name comes from the URL; a body may repeat it.
	Name   string        `json:"name,omitempty"`
	Source TriggerSource `json:"source"`
	// Function is the function the trigger runs.
	Function string `json:"function"`
	// Enabled defaults to true when nil.
	Enabled *bool `json:"enabled,omitempty"`
	// Start is where a new trigger's cursor begins (default "head").
	Start Start `json:"start,omitempty"`
	// Echo lets the trigger see rows its own deliveries wrote.
	Echo bool `json:"echo,omitempty"`
	// Coalesce delivers only the last matching row per entity of a batch.
	Coalesce bool `json:"coalesce,omitempty"`
	// CausalityCap lowers the space's depth cap (0: the space default).
	CausalityCap int `json:"causalityCap,omitempty"`
	// CausalBudget lowers the space's causal budget, the rows one root
	// write may cause in all (0: the space default).
	CausalBudget int `json:"causalBudget,omitempty"`
	// Delivery configures retries, ordering and concurrency.
	Delivery *DeliveryPolicy `json:"delivery,omitempty"`
}

// TriggerSource is what runs a trigger: exactly one of Changes and Cron.
type TriggerSource struct {
	Changes *ChangeSource `json:"changes,omitempty"`
	Cron    *CronSource   `json:"cron,omitempty"`
}

// ChangeSource runs a trigger on changelog rows.
type ChangeSource struct {
	Types         []string `json:"types,omitempty"`
	Ops           []string `json:"ops,omitempty"`
	Actors        []string `json:"actors,omitempty"`
	ExcludeActors []string `json:"excludeActors,omitempty"`
	// When is a CEL expression over row, entity and before.
	When string `json:"when,omitempty"`
}

// CronSource runs a trigger on a schedule (robfig/cron syntax).
type CronSource struct {
	Schedule string `json:"schedule"`
	Timezone string `json:"timezone,omitempty"`
	// CatchUp is "none", "last" (default) or "all".
	CatchUp string `json:"catchUp,omitempty"`
}

// DeliveryPolicy configures a trigger's deliveries; zero fields take the
// defaults.
type DeliveryPolicy struct {
	// Ordering is "entity" (default) or "none".
	Ordering    string   `json:"ordering,omitempty"`
	Concurrency int      `json:"concurrency,omitempty"`
	MaxAttempts int      `json:"maxAttempts,omitempty"`
	Backoff     *Backoff `json:"backoff,omitempty"`
	// Timeout bounds one attempt (a Go duration such as "10s").
	Timeout string `json:"timeout,omitempty"`
}

// Backoff is an exponential retry delay between Initial and Max (Go
// durations).
type Backoff struct {
	Initial string `json:"initial,omitempty"`
	Max     string `json:"max,omitempty"`
}

// Start is a trigger's start position: "head", "beginning" or a seq in
// decimal. In JSON a seq is a number.
type Start string

// Start positions.
const (
	StartHead      Start = "head"
	StartBeginning Start = "beginning"
)

// StartAt returns the start position after seq.
func StartAt(seq int64) Start { return Start(strconv.FormatInt(seq, 10)) }

// MarshalJSON writes a seq as a number and a policy as a string.
func (s Start) MarshalJSON() ([]byte, error) {
	if n, err := strconv.ParseInt(string(s), 10, 64); err == nil {
		return []byte(strconv.FormatInt(n, 10)), nil
	}
	return json.Marshal(string(s))
}

// UnmarshalJSON reads a string or a number.
func (s *Start) UnmarshalJSON(b []byte) error {
	var n int64
	if err := json.Unmarshal(b, &n); err == nil {
		*s = StartAt(n)
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("start: want a string or a seq: %w", err)
	}
	*s = Start(str)
	return nil
}

// Warning is a warning about a saved trigger, such as a cycle in the
// trigger graph ({"code": "cycle", "cycle": [...], "message"}).
type Warning struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Cycle   []string `json:"cycle,omitempty"`
}

// SavedTrigger answers PutTrigger: the trigger as stored and the
// warnings about it.
type SavedTrigger struct {
	Trigger
	Warnings []Warning `json:"warnings"`
}

// TriggerInfo answers GetTrigger: the trigger and, when the engine runs
// it, its runtime status.
type TriggerInfo struct {
	Trigger
	Status *TriggerStatus `json:"status,omitempty"`
}

// SeqRange is a closed range of seqs {lo, hi}.
type SeqRange = store.SeqRange

// TriggerStatus is a trigger's runtime state: every row <= Cursor has a
// stance, Lag is Head - Cursor, Owner holds its lease until LeaseExpires,
// Deliveries counts its deliveries by status.
type TriggerStatus struct {
	Trigger      string         `json:"trigger"`
	Enabled      bool           `json:"enabled"`
	Cursor       int64          `json:"cursor"`
	Start        int64          `json:"start"`
	Head         int64          `json:"head"`
	Lag          int64          `json:"lag"`
	Skipped      []SeqRange     `json:"skipped"`
	Fired        *time.Time     `json:"fired,omitempty"`
	Owner        string         `json:"owner,omitempty"`
	Epoch        int64          `json:"epoch"`
	LeaseExpires *time.Time     `json:"leaseExpires,omitempty"`
	Deliveries   map[string]int `json:"deliveries"`
	OldestOpen   *time.Time     `json:"oldestOpen,omitempty"`
}

// PutTrigger saves the trigger name (admin): its CEL and schedule are
// compiled, its function must exist, and cycles in the trigger graph
// come back as warnings. def is a Trigger or anything that encodes to a
// trigger definition. created reports a new trigger (201).
func (s *Space) PutTrigger(ctx context.Context, name string, def any) (t SavedTrigger, created bool, err error) {
	cl := send(http.MethodPut, s.path("triggers", name), def)
	cl.retry = true // a PUT replaces: repeating it changes nothing more
	ans, err := s.c.callJSON(ctx, cl, &t)
	if err != nil {
		return SavedTrigger{}, false, err
	}
	return t, ans.status == http.StatusCreated, nil
}

// GetTrigger returns the trigger name with its status.
func (s *Space) GetTrigger(ctx context.Context, name string) (TriggerInfo, error) {
	var t TriggerInfo
	_, err := s.c.callJSON(ctx, get(s.path("triggers", name), nil), &t)
	return t, err
}

// Triggers returns the space's triggers.
func (s *Space) Triggers(ctx context.Context) ([]Trigger, error) {
	var out struct {
		Triggers []Trigger `json:"triggers"`
	}
	_, err := s.c.callJSON(ctx, get(s.path("triggers"), nil), &out)
	return out.Triggers, err
}

// DeleteTrigger removes the trigger name.
func (s *Space) DeleteTrigger(ctx context.Context, name string) error {
	_, err := s.c.do(ctx, send(http.MethodDelete, s.path("triggers", name), nil))
	return err
}

// EnableTrigger enables the trigger name; the rows committed while it
// was disabled are evaluated unless skip.
func (s *Space) EnableTrigger(ctx context.Context, name string, skip bool) (TriggerStatus, error) {
	var body any
	if skip {
		body = map[string]bool{"skip": true}
	}
	return s.triggerOp(ctx, name, "enable", body)
}

// DisableTrigger disables the trigger name: its cursor stands still.
func (s *Space) DisableTrigger(ctx context.Context, name string) (TriggerStatus, error) {
	return s.triggerOp(ctx, name, "disable", nil)
}

// ResetTrigger moves the trigger name back to its start policy and
// discards its open deliveries.
func (s *Space) ResetTrigger(ctx context.Context, name string) (TriggerStatus, error) {
	return s.triggerOp(ctx, name, "reset", nil)
}

// ReplayTrigger evaluates the rows after from again.
func (s *Space) ReplayTrigger(ctx context.Context, name string, from int64) (TriggerStatus, error) {
	return s.triggerOp(ctx, name, "replay", map[string]int64{"from": from})
}

// triggerOp posts one operation on a trigger and decodes its status.
func (s *Space) triggerOp(ctx context.Context, name, op string, body any) (TriggerStatus, error) {
	var st TriggerStatus
	_, err := s.c.callJSON(ctx, send(http.MethodPost, s.path("triggers", name, op), body), &st)
	return st, err
}

// BacktestParams select a backtest over the seqs (From, To]; zero
// fields take the server's defaults.
type BacktestParams struct {
	From    int64 `json:"from,omitempty"`
	To      int64 `json:"to,omitempty"`
	Samples int   `json:"samples,omitempty"`
	MaxRows int   `json:"maxRows,omitempty"`
	// Trigger, if set, is a changed definition (a Trigger or its JSON)
	// tested under the name without saving it.
	Trigger any `json:"trigger,omitempty"`
}

// BacktestResult is what a trigger would have matched over (From, To].
type BacktestResult struct {
	Trigger        string           `json:"trigger"`
	From           int64            `json:"from"`
	To             int64            `json:"to"`
	Scanned        int64            `json:"scanned"`
	Matched        int64            `json:"matched"`
	NotMatched     int64            `json:"notMatched"`
	Echo           int64            `json:"echo"`
	Errors         int64            `json:"errors"`
	Coalesced      int64            `json:"coalesced"`
	Samples        []BacktestSample `json:"samples"`
	ProjectedDepth int              `json:"projectedDepth"`
	Truncated      bool             `json:"truncated"`
}

// BacktestSample is one judged row of a backtest.
type BacktestSample struct {
	Seq      int64  `json:"seq"`
	EntityID string `json:"entityId"`
	Type     string `json:"type"`
	Op       string `json:"op"`
	Stance   string `json:"stance"`
	Error    string `json:"error,omitempty"`
}

// BacktestTrigger judges the trigger name (or p.Trigger under that
// name) over a seq range; nothing is written.
func (s *Space) BacktestTrigger(ctx context.Context, name string, p BacktestParams) (BacktestResult, error) {
	var res BacktestResult
	cl := send(http.MethodPost, s.path("triggers", name, "backtest"), p)
	cl.retry = true // a backtest writes nothing
	_, err := s.c.callJSON(ctx, cl, &res)
	return res, err
}

// RunResult answers RunTrigger: the run's delivery, the row it ran on,
// its depth and the receipts of its writes.
type RunResult struct {
	Trigger  string    `json:"trigger"`
	Delivery string    `json:"delivery"`
	Seq      int64     `json:"seq"`
	Depth    int       `json:"depth"`
	Receipts []Receipt `json:"receipts"`
	// LastSeq is the Eddy-Seq header: the last seq the run appended, or
	// the head when it appended nothing.
	LastSeq int64 `json:"-"`
}

// RunTrigger runs the trigger's function once on the entity's latest
// commit; its writes are authored by the trigger, no cursor moves.
func (s *Space) RunTrigger(ctx context.Context, name string, entity EntityKey) (RunResult, error) {
	var res RunResult
	body := map[string]EntityKey{"entity": entity}
	ans, err := s.c.callJSON(ctx, send(http.MethodPost, s.path("triggers", name, "run"), body), &res)
	if err != nil {
		return RunResult{}, err
	}
	res.LastSeq = seqHeader(ans.header)
	return res, nil
}
