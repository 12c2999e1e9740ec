package journal

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/internal/seal"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// Defaults of Options.
const (
	DefaultSafeWindow = 2 * time.Second
	DefaultRetention  = 30 * 24 * time.Hour
	DefaultPageLimit  = 500
	// DefaultScanBudget bounds the commits one page walks, so a user who
	// may read little of a busy space is answered in bounded time (with
	// a short page and hasMore).
	DefaultScanBudget = 10_000
	// MaxStateIDs bounds one state check.
	MaxStateIDs = 1000
	// secretName is the server secret the tokens are authenticated with.
	secretName = "journal.tokens"
)

// Event is what the service reports to Options.Observe, for metrics.
type Event struct {
	// Kind is "page" (a journal page was served), "fetch" (an initial
	// fetch page) or "session".
	Kind  string
	Space string
	// Records and Warnings (by reason) count what the page carried.
	Records  int
	Warnings map[string]int
	// Lag is, for a page that walked commits, how long ago the newest
	// of them was committed: the settled lag its reader sees.
	Lag time.Duration
}

// Options tune a Service. The zero value is usable.
type Options struct {
	// SafeWindow holds back commits younger than it (default
	// DefaultSafeWindow).
	SafeWindow time.Duration
	// Retention is how long a session's cursors are accepted, counted
	// from its creation (default DefaultRetention).
	Retention time.Duration
	// PageLimit is the largest (and default) page (default
	// DefaultPageLimit).
	PageLimit int
	// ScanBudget bounds the commits a page walks and the entities a
	// fetch page scans (default DefaultScanBudget).
	ScanBudget int
	// Now is the clock (default time.Now); the log's clock must agree.
	Now func() time.Time
	// Observe, if set, hears every Event. It must not block.
	Observe func(Event)
	// Logger receives operational logs (nil = slog.Default()).
	Logger *slog.Logger
}

// Service serves journals of every space; it is safe for concurrent use.
type Service struct {
	log  *changelog.Log
	st   store.Store
	opts Options

	secret *seal.Secret // the tokens' server secret, read on first use
}

// New returns a Service over the log.
func New(lg *changelog.Log, opts Options) *Service {
	if opts.SafeWindow <= 0 {
		opts.SafeWindow = DefaultSafeWindow
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.PageLimit <= 0 {
		opts.PageLimit = DefaultPageLimit
	}
	if opts.ScanBudget <= 0 {
		opts.ScanBudget = DefaultScanBudget
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{log: lg, st: lg.Store(), opts: opts, secret: seal.NewSecret(lg.Store(), secretName)}
}

// Client is who a journal request acts for: a user of an application,
// with the one readability rule that judges its snapshots.
type Client struct {
	User, Application string
	// Types, when not empty, is the token's type allow-list: the initial
	// fetch walks only those types (Reader must agree).
	Types  []string
	Reader Reader
}

func (c Client) check() error {
	if c.User == "" || c.Application == "" {
		return problem.New(problem.Forbidden, "the journal needs a token created with a user and an application")
	}
	return nil
}

// Capabilities is what GET .../journal/capabilities answers.
type Capabilities struct {
	SafeWindowSeconds    float64 `json:"safeWindowSeconds"`
	JournalRetentionDays float64 `json:"journalRetentionDays"`
	PageLimit            int     `json:"pageLimit"`
}

// Capabilities returns the server's journal settings.
func (s *Service) Capabilities() Capabilities {
	return Capabilities{
		SafeWindowSeconds:    s.opts.SafeWindow.Seconds(),
		JournalRetentionDays: s.opts.Retention.Hours() / 24,
		PageLimit:            s.opts.PageLimit,
	}
}

func (s *Service) now() time.Time { return s.opts.Now().UTC().Truncate(time.Microsecond) }

func (s *Service) observe(ev Event) {
	if s.opts.Observe != nil {
		s.opts.Observe(ev)
	}
}

// codec returns the token codec of one space and client, reading the
// server secret on first use.
func (s *Service) codec(ctx context.Context, space string, c Client) (codec, error) {
	sec, err := s.secret.Get(ctx)
	if err != nil {
		return codec{}, err
	}
	return newCodec(sec, space, c.User, c.Application), nil
}

// settled returns the settled tail of a space at now: the newest commit
// at least a safe window old. It only grows with time and with appends
// (commits below the head are visible and immutable), so a position
// never passes a commit a later page would hand over.
func (s *Service) settled(ctx context.Context, sp store.Space, now time.Time) (int64, error) {
	return s.seqAt(ctx, sp, now.Add(-s.opts.SafeWindow))
}

// settleChunk is how many rows seqAt reads in its first step back from
// the head; each further step reads twice as many, up to maxSettleChunk.
const (
	settleChunk    = 256
	maxSettleChunk = 8192
)

// seqAt returns the newest retained seq whose commit is not younger than
// cutoff (the horizon when there is none), walking back from the head.
func (s *Service) seqAt(ctx context.Context, sp store.Space, cutoff time.Time) (int64, error) {
	hi := sp.Head
	for chunk := int64(settleChunk); hi > sp.Horizon; chunk = min(2*chunk, maxSettleChunk) {
		lo := max(sp.Horizon, hi-chunk)
		rows, err := s.st.Rows(ctx, store.RowsParams{Space: sp.ID, Lo: lo, Hi: hi, Desc: true, Limit: int(chunk)})
		if err != nil {
			return 0, fmt.Errorf("find settled tail: %w", err)
		}
		for _, r := range rows {
			if !r.TS.After(cutoff) {
				return r.Seq, nil
			}
		}
		hi = lo
	}
	return sp.Horizon, nil
}
