package eddy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/definitions"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/internal/datadir"
	"github.com/eddy-run/eddy/journal"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/sqlite"
	"github.com/eddy-run/eddy/telemetry"
	"github.com/eddy-run/eddy/views"
	"github.com/eddy-run/eddy/watch"
)

// Defaults of a Config.
const (
	// DefaultDataDir is where eddy keeps its files when Config.DataDir is
	// empty.
	DefaultDataDir = "./eddy-data"
	// DefaultSpace is the space that exists from the first start.
	DefaultSpace = "default"
	// SQLiteFile is the embedded database's file name inside the data
	// directory.
	SQLiteFile = "eddy.db"
)

// ErrUnsupportedDatabase reports a Config.DatabaseURL whose scheme names no
// driver.
var ErrUnsupportedDatabase = errors.New("unsupported database URL")

// Config configures Open. The zero value runs on embedded SQLite under
// ./eddy-data.
type Config struct {
	// DataDir holds eddy's files (the SQLite database, the admin token).
	// Default DefaultDataDir. It is created with mode 0700.
	DataDir string
	// DatabaseURL selects the store: "" is embedded SQLite at
	// DataDir/eddy.db, "sqlite:PATH" is SQLite at PATH, and
	// "postgres://..." or "postgresql://..." is PostgreSQL.
	DatabaseURL string
	// Logger receives operational logs (nil = slog.Default()).
	Logger *slog.Logger
	// Heartbeat is how long a watch stream may stay silent before it
	// sends the heartbeat {} (default watch.DefaultHeartbeat, 15s).
	Heartbeat time.Duration
	// Watch tunes the watch hub (stream caps, write timeout, buffers);
	// Heartbeat above wins when set, and Open sets its Logger.
	Watch watch.Options
	// Retention is the policy the background housekeeper prunes every
	// space with; the zero value prunes nothing. Receipts past the
	// idempotency window are expired either way.
	Retention changelog.Retention
	// HousekeepInterval is how often housekeeping runs (default
	// changelog.DefaultHousekeepInterval, 1m).
	HousekeepInterval time.Duration
	// Engine tunes the trigger engine (leases, batches, polling); its
	// Logger defaults to Logger.
	Engine engine.Options
	// ViewSessionTTL is the retry window of frozen view bootstrap
	// sessions (default views.DefaultSessionTTL, 10m).
	ViewSessionTTL time.Duration
	// ClientRetention is how long a push client idle since its last
	// ordinal is kept (default changelog.DefaultClientRetention).
	ClientRetention time.Duration
	// JournalSafeWindow holds journal commits back until they are this
	// old (default journal.DefaultSafeWindow, 2s); JournalRetention is
	// how long a journal session's cursors are accepted (default
	// journal.DefaultRetention, 30 days).
	JournalSafeWindow time.Duration
	JournalRetention  time.Duration
	// WebhookAllow and WebhookDeny are the webhook destination policy
	// (functions.Egress: CIDRs, addresses, host names, "*.domain"),
	// checked when a webhook function is saved and on every connection.
	// Link-local and metadata addresses are denied whatever the lists
	// say (functions.DefaultDeny); an empty allow list allows the rest.
	WebhookAllow, WebhookDeny []string
	// NoEngine leaves the trigger engine stopped: triggers are stored and
	// can be inspected, but nothing evaluates or delivers in this process.
	NoEngine bool
	// Durability is DurabilityStrict (the default, "") or
	// DurabilityRelaxed.
	Durability string
}

// Durability levels (Config.Durability, eddy serve --durability).
const (
	// DurabilityStrict acknowledges a write only once it is on stable
	// storage: SQLite synchronous=FULL, PostgreSQL synchronous_commit on.
	DurabilityStrict = "strict"
	// DurabilityRelaxed is SQLite synchronous=NORMAL in WAL mode and
	// PostgreSQL synchronous_commit=off: a power loss may lose the last
	// moments of acknowledged writes, never corrupts or reorders.
	DurabilityRelaxed = "relaxed"
)

// ErrBadDurability reports a Config.Durability that is neither strict nor
// relaxed.
var ErrBadDurability = errors.New("durability must be strict or relaxed")

// hubStopTimeout bounds how long Close waits for watch streams to end.
const hubStopTimeout = 5 * time.Second

// engineStopTimeout bounds how long Close waits for deliveries under way.
const engineStopTimeout = 15 * time.Second

// Eddy is one opened eddy: a migrated store with the services built on it.
// Close releases it.
type Eddy struct {
	dataDir string
	lock    *datadir.Lock // held from Open to Close
	st      store.Store
	log     *changelog.Log
	hk      *changelog.Housekeeper
	auth    *auth.Service
	hub     *watch.Hub
	defs    *definitions.Service
	views   *views.Service
	journal *journal.Service
	eng     *engine.Engine
	funcs   *functions.Registry
	tel     *telemetry.Telemetry
	logger  *slog.Logger

	closeOnce sync.Once
	closeErr  error
}

// Open creates the data directory, opens the store the config selects,
// runs its migrations, builds the changelog and auth services, makes sure
// the space "default" exists and starts the watch hub and the retention
// housekeeper (Config.Retention). On error nothing is left open.
func Open(ctx context.Context, cfg Config) (*Eddy, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	lock, err := datadir.Acquire(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	st, driver, err := openStore(ctx, cfg)
	if err != nil {
		return nil, errors.Join(err, lock.Release())
	}
	egress, err := functions.NewEgress(cfg.WebhookAllow, cfg.WebhookDeny)
	if err != nil {
		return nil, errors.Join(err, st.Close(), lock.Release())
	}
	if err := st.Migrate(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("migrate %s: %w", driver, err), st.Close(), lock.Release())
	}
	e := &Eddy{logger: logger, dataDir: cfg.DataDir, lock: lock, st: st, auth: auth.NewService(st), funcs: &functions.Registry{}}
	// The watchers gauge reads the hub at scrape time, after Open.
	e.tel, err = telemetry.New(telemetry.Options{Watchers: func() int { return e.hub.Watchers() }})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("telemetry: %w", err), st.Close(), lock.Release())
	}
	// The log's commits wake the hub and feed the metrics; the hub reads
	// through the log.
	e.log = changelog.New(st, changelog.Options{Logger: logger, OnCommit: e.notify, Observe: e.tel.ObserveGroup, ClientRetention: cfg.ClientRetention})
	wo := cfg.Watch
	if cfg.Heartbeat > 0 {
		wo.Heartbeat = cfg.Heartbeat
	}
	wo.Logger = logger
	e.hub = watch.New(e.log, wo)
	if cfg.Engine.Logger == nil {
		cfg.Engine.Logger = logger
	}
	if cfg.Engine.Egress == nil {
		cfg.Engine.Egress = egress
	}
	if cfg.Engine.Observe == nil {
		cfg.Engine.Observe = e.tel.ObserveEngine
	}
	e.eng = engine.New(e.log, e.funcs, cfg.Engine)
	e.tel.WatchTriggers(e.eng.Gauges)
	e.views = views.New(e.log, views.Options{SessionTTL: cfg.ViewSessionTTL, Hub: e.hub, Logger: logger, Observe: e.tel.ObserveViews})
	e.tel.WatchViews(e.views.OpenSessions)
	e.journal = journal.New(e.log, journal.Options{SafeWindow: cfg.JournalSafeWindow, Retention: cfg.JournalRetention, Logger: logger, Observe: e.tel.ObserveJournal})
	e.tel.WatchJournal()
	e.defs = definitions.New(e.log, definitions.Options{Handlers: e.funcs, Hooks: e.eng, Executor: e.eng, Egress: cfg.Engine.Egress})
	if cfg.Retention.Limit == nil && !cfg.NoEngine {
		cfg.Retention.Limit = func(ctx context.Context, space string) (int64, error) {
			limit, _, err := e.eng.PruneLimit(ctx, space)
			return limit, err
		}
	}
	e.hk = changelog.NewHousekeeper(e.log, cfg.Retention, cfg.HousekeepInterval, logger)
	if _, err := e.log.EnsureSpace(ctx, DefaultSpace); err != nil {
		return nil, errors.Join(fmt.Errorf("ensure space %s: %w", DefaultSpace, err), e.Close())
	}
	if err := e.hub.Start(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("start watch hub: %w", err), e.Close())
	}
	if err := e.hk.Start(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("start housekeeper: %w", err), e.Close())
	}
	if !cfg.NoEngine {
		if err := e.eng.Start(ctx); err != nil {
			return nil, errors.Join(fmt.Errorf("start trigger engine: %w", err), e.Close())
		}
	}
	logger.Debug("eddy opened", "driver", driver, "dataDir", cfg.DataDir)
	return e, nil
}

// openStore opens the driver cfg.DatabaseURL selects and names it.
func openStore(ctx context.Context, cfg Config) (store.Store, string, error) {
	kind, target, err := parseDatabaseURL(cfg.DataDir, cfg.DatabaseURL)
	if err != nil {
		return nil, "", err
	}
	relaxed := false
	switch cfg.Durability {
	case "", DurabilityStrict:
	case DurabilityRelaxed:
		relaxed = true
	default:
		return nil, "", fmt.Errorf("%w: %q", ErrBadDurability, cfg.Durability)
	}
	switch kind {
	case "postgres":
		st, err := postgres.OpenOptions(ctx, target, postgres.Options{AsyncCommit: relaxed})
		if err != nil {
			return nil, "", fmt.Errorf("open postgres: %w", err)
		}
		return st, kind, nil
	default:
		o := sqlite.Options{}
		if relaxed {
			o.Synchronous = "NORMAL"
		}
		st, err := sqlite.OpenOptions(ctx, target, o)
		if err != nil {
			return nil, "", fmt.Errorf("open sqlite %s: %w", target, err)
		}
		return st, kind, nil
	}
}

// parseDatabaseURL returns the driver ("sqlite" or "postgres") and what to
// hand it (a file path or a connection URL).
func parseDatabaseURL(dataDir, raw string) (kind, target string, err error) {
	if raw == "" {
		return "sqlite", filepath.Join(dataDir, SQLiteFile), nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "", "", fmt.Errorf("%w: %q: no scheme", ErrUnsupportedDatabase, redact(raw))
	}
	switch u.Scheme {
	case "postgres", "postgresql":
		return "postgres", raw, nil
	case "sqlite":
		path := u.Opaque
		if path == "" {
			path = u.Host + u.Path
		}
		if path == "" {
			return "", "", fmt.Errorf("%w: %q: no path", ErrUnsupportedDatabase, raw)
		}
		return "sqlite", path, nil
	default:
		return "", "", fmt.Errorf("%w: scheme %q", ErrUnsupportedDatabase, u.Scheme)
	}
}

// redact hides a password in a URL meant for an error message.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// notify is the log's OnCommit hook: it wakes the watch hub and the
// trigger engine (never blocking the committer).
func (e *Eddy) notify(space string, head int64) {
	e.hub.Notify(space, head)
	e.notifyEngine(space, head)
}

// notifyEngine wakes the trigger engine's evaluator of the space.
func (e *Eddy) notifyEngine(space string, head int64) {
	if e.eng != nil {
		e.eng.Notify(space, head)
	}
}

// Journal returns the per-user journal service: pass it to
// server.Config.Journal.
func (e *Eddy) Journal() *journal.Service { return e.journal }

// Engine returns the trigger engine: pass it to server.Config.Engine.
func (e *Eddy) Engine() *engine.Engine { return e.eng }

// Hub returns the watch hub: pass it to server.Config.Hub, and Stop it
// before shutting the HTTP server down so streams end with a terminal
// frame.
func (e *Eddy) Hub() *watch.Hub { return e.hub }

// Telemetry returns the process's metrics: pass it to
// server.Config.Metrics to record requests and serve GET /metrics.
func (e *Eddy) Telemetry() *telemetry.Telemetry { return e.tel }

// Log returns the changelog service.
func (e *Eddy) Log() *changelog.Log { return e.log }

// Definitions returns the function and trigger definitions service: pass
// it to server.Config.Definitions.
func (e *Eddy) Definitions() *definitions.Service { return e.defs }

// Views returns the view sync service: pass it to server.Config.Views.
func (e *Eddy) Views() *views.Service { return e.views }

// Functions returns the registry of this process's Go handlers: register
// each handler a function of kind "go" names ({"kind": "go", "handler":
// "sync-to-crm"}) right after Open. Dry runs call them, and GET answers
// say whether a go function's handler is "registered".
func (e *Eddy) Functions() *functions.Registry { return e.funcs }

// Auth returns the token service.
func (e *Eddy) Auth() *auth.Service { return e.auth }

// Store returns the underlying store driver.
func (e *Eddy) Store() store.Store { return e.st }

// DataDir returns the data directory in use.
func (e *Eddy) DataDir() string { return e.dataDir }

// Close stops everything, in this order:
//
//  1. The watch hub: its streams end with the terminal unavailable frame
//     (waiting up to 5s).
//  2. The trigger engine (engine.(*Engine).Stop): the lease manager stops
//     renewing, the evaluators stop, every dispatcher drains its
//     attempts under way in parallel (each at most 10s, all within
//     engineStopTimeout, then canceled), each drained trigger's lease is
//     released with its own 5s deadline so another process takes over at
//     once, and the shared delivery updates end.
//  3. The housekeeper, letting a pass in progress finish (within the
//     hub's 5s).
//  4. The changelog's committers, then the store.
//  5. The metrics.
//
// It is safe to call more than once; later calls return the first
// result.
func (e *Eddy) Close() error {
	e.closeOnce.Do(func() {
		var errs []error
		ctx, cancel := context.WithTimeout(context.Background(), hubStopTimeout)
		defer cancel()
		if err := e.hub.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop watch hub: %w", err))
		}
		if e.eng != nil {
			ectx, ecancel := context.WithTimeout(context.Background(), engineStopTimeout)
			if err := e.eng.Stop(ectx); err != nil {
				errs = append(errs, fmt.Errorf("stop trigger engine: %w", err))
			}
			ecancel()
		}
		if err := e.hk.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop housekeeper: %w", err))
		}
		if err := e.log.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close log: %w", err))
		}
		if err := e.st.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
		if err := e.tel.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop telemetry: %w", err))
		}
		if err := e.lock.Release(); err != nil {
			errs = append(errs, fmt.Errorf("unlock data dir: %w", err))
		}
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}
