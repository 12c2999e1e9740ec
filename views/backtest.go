package views

import (
	"context"
	"encoding/json"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// Backtest limits.
const (
	// DefaultBacktestSamples and MaxBacktestSamples bound the sample ids
	// kept per transition.
	DefaultBacktestSamples = 10
	MaxBacktestSamples     = 100
	// DefaultBacktestCommits and MaxBacktestCommits bound the source
	// commits one backtest reads.
	DefaultBacktestCommits = 100_000
	MaxBacktestCommits     = 1_000_000
	// backtestBatch is the commits read per store read.
	backtestBatch = 500
)

// BacktestParams select a backtest: the saved view, or Definition judged
// under the view's name without saving it, over the source commits
// (From, To].
type BacktestParams struct {
	Space, View string
	// Definition, if set, is a proposed definition of the view.
	Definition json.RawMessage
	// From and To bound the commits judged; To 0 is the head.
	From, To int64
	// Samples is the ids kept per transition (default 10, at most 100).
	Samples int
	// MaxCommits bounds the commits read (default 100000, at most
	// 1000000); To is then the last one read and Truncated is set.
	MaxCommits int
	// NoSizes skips counting the view at From (SizeAtFrom and SizeAtTo
	// are then left out), for a caller walking a long range in chunks.
	NoSizes bool
	// Reader decides what counts as held; it must be allowed every type
	// of the view.
	Reader Reader
}

// BacktestSample is one entity a transition moved, at the commit that
// moved it.
type BacktestSample struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	ID   string `json:"id"`
}

// BacktestResult is what a view did over the commits (From, To]: how
// many entities it held at both ends, and the membership transitions of
// every change in between. Entered counts changes to an entity the view
// did not hold and holds after; Left changes from held to not held
// (removed_from_scope); Deleted deletions of a held entity; Updated
// changes of an entity held on both sides. SizeAtTo is SizeAtFrom +
// Entered - Left - Deleted.
type BacktestResult struct {
	View       string                      `json:"view"`
	From       int64                       `json:"from"`
	To         int64                       `json:"to"`
	Scanned    int64                       `json:"scanned"`
	SizeAtFrom *int64                      `json:"sizeAtFrom,omitempty"`
	SizeAtTo   *int64                      `json:"sizeAtTo,omitempty"`
	Entered    int64                       `json:"entered"`
	Left       int64                       `json:"left"`
	Updated    int64                       `json:"updated"`
	Deleted    int64                       `json:"deleted"`
	Samples    map[string][]BacktestSample `json:"samples"`
	Truncated  bool                        `json:"truncated"`
}

func (p *BacktestParams) normalize() error {
	switch {
	case p.Samples == 0:
		p.Samples = DefaultBacktestSamples
	case p.Samples < 0 || p.Samples > MaxBacktestSamples:
		return fieldError("samples", "want 1 to %d, got %d", MaxBacktestSamples, p.Samples)
	}
	switch {
	case p.MaxCommits == 0:
		p.MaxCommits = DefaultBacktestCommits
	case p.MaxCommits < 0 || p.MaxCommits > MaxBacktestCommits:
		return fieldError("maxCommits", "want 1 to %d, got %d", MaxBacktestCommits, p.MaxCommits)
	}
	return nil
}

// Backtest judges the commits (From, To] with the view's membership rule,
// recording and sending nothing, so a filter change can be judged before
// it resets clients. A From below the horizon is a
// *changelog.HistoryUnavailableError.
func (s *Service) Backtest(ctx context.Context, p BacktestParams) (BacktestResult, error) {
	if err := p.normalize(); err != nil {
		return BacktestResult{}, err
	}
	d, err := s.backtestView(ctx, p)
	if err != nil {
		return BacktestResult{}, err
	}
	if err := authorize(d, p.Reader); err != nil {
		return BacktestResult{}, err
	}
	sp, err := s.log.Space(ctx, p.Space)
	if err != nil {
		return BacktestResult{}, err
	}
	if err := p.checkRange(sp); err != nil {
		return BacktestResult{}, err
	}
	res := BacktestResult{View: p.View, From: p.From, To: p.From, Samples: map[string][]BacktestSample{
		"entered": {}, "left": {}, "updated": {}, "deleted": {}}}
	if err := s.walk(ctx, sp, d, &p, &res); err != nil {
		return BacktestResult{}, err
	}
	if p.NoSizes {
		return res, nil
	}
	size, err := s.count(ctx, sp.ID, d, p.From, p.Reader)
	if err != nil {
		return BacktestResult{}, err
	}
	end := size + res.Entered - res.Left - res.Deleted
	res.SizeAtFrom, res.SizeAtTo = &size, &end
	return res, nil
}

// backtestView returns the saved view or the proposed definition.
func (s *Service) backtestView(ctx context.Context, p BacktestParams) (*Definition, error) {
	if len(p.Definition) == 0 {
		d, _, err := s.definition(ctx, p.Space, p.View)
		return d, err
	}
	if _, err := s.log.Space(ctx, p.Space); err != nil {
		return nil, err
	}
	return Parse(p.View, p.Definition)
}

// checkRange resolves To 0 to the head and checks (From, To].
func (p *BacktestParams) checkRange(sp store.Space) error {
	if p.To == 0 {
		p.To = sp.Head
	}
	switch {
	case p.From < 0:
		return fieldError("from", "must not be negative, got %d", p.From)
	case p.To < 0 || p.To > sp.Head:
		return fieldError("to", "want a seq up to the head %d, got %d", sp.Head, p.To).With("head", sp.Head)
	case p.From > p.To:
		return fieldError("from", "%d is after to %d", p.From, p.To)
	case p.From < sp.Horizon:
		return &changelog.HistoryUnavailableError{Space: sp.ID, Requested: p.From, Horizon: sp.Horizon}
	}
	return nil
}

// walk judges the commits of the range batch by batch.
func (s *Service) walk(ctx context.Context, sp store.Space, d *Definition, p *BacktestParams, res *BacktestResult) error {
	for res.To < p.To {
		if res.Scanned >= int64(p.MaxCommits) {
			res.Truncated = true
			return nil
		}
		n := min(int64(backtestBatch), p.To-res.To, int64(p.MaxCommits)-res.Scanned)
		commits, err := s.readCommits(ctx, sp, res.To, int(n))
		if err != nil {
			return err
		}
		for i := range commits {
			res.judge(d, &commits[i], p)
		}
		if len(commits) == 0 {
			return nil
		}
	}
	return nil
}

// judge counts the transitions of one commit.
func (res *BacktestResult) judge(d *Definition, c *store.Commit, p *BacktestParams) {
	res.Scanned++
	res.To = c.Seq
	for i := range c.Changes {
		ch := &c.Changes[i]
		j := d.Judge(ch)
		before := j.Before && p.Reader.CanReadRecord(ch.Before)
		after := j.After && p.Reader.CanReadRecord(ch.After)
		var kind string
		switch {
		case before && after:
			kind, res.Updated = "updated", res.Updated+1
		case after:
			kind, res.Entered = "entered", res.Entered+1
		case before && ch.After == nil:
			kind, res.Deleted = "deleted", res.Deleted+1
		case before:
			kind, res.Left = "left", res.Left+1
		default:
			continue
		}
		if len(res.Samples[kind]) < p.Samples {
			res.Samples[kind] = append(res.Samples[kind], BacktestSample{Seq: c.Seq, Type: ch.Type, ID: ch.ID})
		}
	}
}

// count returns how many records the view held as of seq w.
func (s *Service) count(ctx context.Context, space string, d *Definition, w int64, r Reader) (int64, error) {
	var (
		n   int64
		pos scanPos
	)
	for {
		recs, next, done, err := s.scan(ctx, space, d, w, pos, scanChunk, 0, r.CanReadRecord)
		if err != nil {
			return 0, err
		}
		n += int64(len(recs))
		if done {
			return n, nil
		}
		pos = next
	}
}
