package definitions

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// Backtest limits.
const (
	// DefaultBacktestSamples is the number of matched rows sampled when
	// BacktestParams.Samples is 0; MaxBacktestSamples bounds it.
	DefaultBacktestSamples = 10
	MaxBacktestSamples     = 100
	// DefaultBacktestRows bounds the rows one backtest scans when
	// BacktestParams.MaxRows is 0; MaxBacktestRows bounds MaxRows.
	DefaultBacktestRows = 100_000
	MaxBacktestRows     = 1_000_000
	// backtestPage is the Pull budget of one page, in changes: the
	// engine's batch, so the pages coalesce as a lone trigger catching up
	// would.
	backtestPage = triggers.BatchRows
	// errorSamples is how many erroring rows are sampled besides the
	// matches.
	errorSamples = 5
	// unsavedName names an unsaved trigger backtested without a name.
	unsavedName = "backtest"
)

// BacktestParams name the trigger to backtest and the rows to judge.
type BacktestParams struct {
	// Name is the trigger: a saved one, or the name Trigger is judged
	// under ("backtest" when empty).
	Name string `json:"-"`
	// Trigger, if set, is an unsaved (new or changed) definition, parsed
	// as a save would parse it.
	Trigger json.RawMessage `json:"trigger,omitempty"`
	// From and To bound the seqs judged: (From, To]. To 0 means the head.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Samples is how many matched rows to return (default 10, max 100).
	Samples int `json:"samples"`
	// MaxRows bounds the rows scanned (default 100000, max 1000000).
	MaxRows int `json:"maxRows"`
}

// BacktestSample is one judged row of a backtest.
type BacktestSample struct {
	Seq      int64           `json:"seq"`
	EntityID string          `json:"entityId"`
	Type     string          `json:"type"`
	Op       string          `json:"op"`
	Stance   triggers.Stance `json:"stance"`
	Error    string          `json:"error,omitempty"`
}

// BacktestResult is what a backtest found over the seqs (From, To].
//
// Matched counts every row the trigger would match. Coalesced, for a
// trigger with coalesce, counts the matched rows a later match of the same
// entity would replace. It approximates the live batches with the scan's
// pages (triggers.BatchRows changes, the engine's default batch): the evaluator's batches depend on timing, so
// the live count may differ. ProjectedDepth is the causal depth the
// deliveries would run at: one more than the deepest matched row's
// provenance depth (0 when nothing matched).
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

// Backtest judges the committed rows (p.From, p.To] of a space with a
// change trigger, the way a live trigger would (prefilter, echo, then
// `when`), without delivering or recording anything. To is reported as
// the last seq scanned; Truncated says that MaxRows stopped the scan
// before p.To. A cron trigger, a range outside 0..head or From > To is a
// bad_request; a From below the horizon a
// *changelog.HistoryUnavailableError.
func (s *Service) Backtest(ctx context.Context, space string, p BacktestParams) (BacktestResult, error) {
	t, err := s.backtestTrigger(ctx, space, p)
	if err != nil {
		return BacktestResult{}, err
	}
	if err := p.normalize(); err != nil {
		return BacktestResult{}, err
	}
	sp, err := s.log.Space(ctx, space)
	if err != nil {
		return BacktestResult{}, err
	}
	if err := p.checkRange(space, sp); err != nil {
		return BacktestResult{}, err
	}
	b := &backtest{t: t, p: p, res: BacktestResult{Trigger: t.Name, From: p.From, To: p.From, Samples: []BacktestSample{}}}
	if err := s.scan(ctx, space, b); err != nil {
		return BacktestResult{}, err
	}
	return b.res, nil
}

// backtestTrigger returns the trigger p names or defines.
func (s *Service) backtestTrigger(ctx context.Context, space string, p BacktestParams) (*triggers.Trigger, error) {
	var t *triggers.Trigger
	var err error
	if len(p.Trigger) == 0 {
		if p.Name == "" {
			return nil, problem.New(problem.BadRequest, "name a saved trigger or give a trigger definition")
		}
		t, err = s.Trigger(ctx, space, p.Name)
	} else {
		name := p.Name
		if name == "" {
			name = unsavedName
		}
		if err := checkName("trigger", name); err != nil {
			return nil, err
		}
		if err := s.checkSpace(ctx, space); err != nil {
			return nil, err
		}
		t, err = triggers.ParseTrigger(name, p.Trigger)
	}
	if err != nil {
		return nil, err
	}
	if t.Source.Changes == nil {
		return nil, problem.New(problem.BadRequest, "trigger %q runs on a schedule: there are no rows to backtest", t.Name)
	}
	return t, nil
}

// normalize fills in the defaults of Samples and MaxRows and checks them.
func (p *BacktestParams) normalize() error {
	switch {
	case p.Samples == 0:
		p.Samples = DefaultBacktestSamples
	case p.Samples < 0 || p.Samples > MaxBacktestSamples:
		return fieldError("samples", "want 1..%d, got %d", MaxBacktestSamples, p.Samples)
	}
	switch {
	case p.MaxRows == 0:
		p.MaxRows = DefaultBacktestRows
	case p.MaxRows < 0 || p.MaxRows > MaxBacktestRows:
		return fieldError("maxRows", "want 1..%d, got %d", MaxBacktestRows, p.MaxRows)
	}
	return nil
}

// checkRange resolves To 0 to the head and checks (From, To] against the
// space's history.
func (p *BacktestParams) checkRange(space string, sp store.Space) error {
	if p.To == 0 {
		p.To = sp.Head
	}
	switch {
	case p.From < 0:
		return fieldError("from", "must not be negative, got %d", p.From)
	case p.To < 0:
		return fieldError("to", "must not be negative, got %d", p.To)
	case p.To > sp.Head:
		return fieldError("to", "%d is ahead of the head %d", p.To, sp.Head).With("head", sp.Head)
	case p.From > p.To:
		return fieldError("from", "%d is after to %d", p.From, p.To)
	case p.From < sp.Horizon:
		return &changelog.HistoryUnavailableError{Space: space, Requested: p.From, Horizon: sp.Horizon}
	}
	return nil
}

// backtest is one backtest's state.
type backtest struct {
	t      *triggers.Trigger
	p      BacktestParams
	res    BacktestResult
	errors int
}

// scan pulls the range page by page and judges every row.
func (s *Service) scan(ctx context.Context, space string, b *backtest) error {
	after := b.p.From
	for after < b.p.To {
		left := int64(b.p.MaxRows) - b.res.Scanned
		if left <= 0 {
			b.res.Truncated = true
			return nil
		}
		limit := min(int64(backtestPage), b.p.To-after, left)
		page, err := s.log.Pull(ctx, space, after, int(limit))
		if err != nil {
			return err
		}
		if len(page.Commits) == 0 {
			return nil
		}
		b.page(page.Commits)
		after = b.res.To
	}
	return nil
}

// page judges one page of commits.
func (b *backtest) page(cs []store.Commit) {
	var co triggers.Coalescer
	slots := 0
	for i := range cs {
		c := &cs[i]
		if c.Seq > b.p.To {
			break
		}
		b.res.Scanned++
		b.res.To = c.Seq
		v := triggers.Judge(b.t, c, triggers.Context{})
		switch st := v.Stance; st {
		case triggers.StanceMatched:
			b.res.Matched++
			b.res.ProjectedDepth = max(b.res.ProjectedDepth, c.Provenance.Depth+1)
			if b.t.Coalesce {
				if _, replaced := co.Slot(store.EntityKey{Type: c.Type, ID: c.EntityID}, slots); replaced {
					b.res.Coalesced++
				} else {
					slots++
				}
			}
			if len(b.res.Samples)-b.errors < b.p.Samples {
				b.sample(c, st, nil)
			}
		case triggers.StanceEcho:
			b.res.Echo++
		case triggers.StanceError:
			b.res.Errors++
			if b.errors < errorSamples {
				b.errors++
				b.sample(c, st, v.Err)
			}
		default:
			b.res.NotMatched++
		}
	}
}

// sample records a judged row.
func (b *backtest) sample(c *store.Commit, st triggers.Stance, err error) {
	sm := BacktestSample{Seq: c.Seq, EntityID: c.EntityID, Type: c.Type, Op: c.Op, Stance: st}
	if err != nil {
		sm.Error = err.Error()
	}
	b.res.Samples = append(b.res.Samples, sm)
}

// fieldError is a bad_request naming the request body field name.
func fieldError(name, format string, args ...any) *problem.Error {
	return problem.New(problem.BadRequest, "%s: %s", name, fmt.Sprintf(format, args...)).With("field", name)
}
