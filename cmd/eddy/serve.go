package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/internal/gcpace"
	"github.com/eddy-run/eddy/internal/logbuf"
	"github.com/eddy-run/eddy/journal"
	"github.com/eddy-run/eddy/server"
	"github.com/eddy-run/eddy/telemetry"
	"github.com/eddy-run/eddy/views"
)

// serveOptions are the flags of eddy serve.
type serveOptions struct {
	addr            string
	database        string
	shutdownTimeout time.Duration
	heartbeat       time.Duration

	retainAge         time.Duration
	retainRows        int64
	housekeepInterval time.Duration

	viewSessionTTL  time.Duration
	clientRetention time.Duration

	safeWindowSeconds    float64
	journalRetentionDays float64

	durability string

	gcMinInterval time.Duration

	noTriggers   bool
	leaseTTL     time.Duration
	triggerPoll  time.Duration
	triggerBatch int

	ops    opsOptions
	limits limitOptions

	webhookAllow, webhookDeny []string
}

func (a *app) serveCommand() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the eddy server",
		Long: `Run the eddy server. With no --database it keeps an embedded SQLite database
at <data>/eddy.db; --database postgres://... (or EDDY_DATABASE_URL) selects
PostgreSQL. Migrations run at start. One process at a time may use a data
directory: a second one exits saying which process holds it. On first start
(when the store holds no admin token yet) an admin token is created, written
to <data>/admin.token (mode 0600) and printed, once the server is listening.

Retention: --retain-age and --retain-rows prune every space's log in the
background, every --housekeep-interval (default: no pruning; when both are
set, the one that prunes further wins). Receipts older than the idempotency
window (24h) are deleted either way. Pruning never takes rows an enabled
trigger has not judged or an open delivery still needs.

Triggers: the engine evaluates every space's triggers and runs their
deliveries. Several processes sharing one PostgreSQL database spread the
triggers by leases (--lease-ttl); --no-triggers serves the API without
running any trigger in this process.

Operations: the port opens before migrations run; /healthz answers 200
from then on and /readyz (and the API) 503 until the server is ready.
--log-format json writes one JSON object a line, --log-level sets the
least severe level logged. --cors-origin (repeatable) lets browser apps
served from those origins call the API; preflights need no token. Traces
are exported over OTLP/HTTP when the standard OpenTelemetry environment
asks for it (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_EXPORTER=otlp, ...).

SIGINT or SIGTERM shuts down gracefully: watch streams end first with the
terminal frame {"error":{"code":"unavailable",...}}, then in-flight requests
get up to --shutdown-timeout, then the store is closed.`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return a.serve(cmd.Context(), o)
		}),
	}
	o.bind(cmd, a.getenv)
	return cmd
}

// bind defines the flags of eddy serve on cmd, bound to o.
func (o *serveOptions) bind(cmd *cobra.Command, getenv func(string) string) {
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:7070", "address to listen on")
	f.StringVar(&o.database, "database", getenv("EDDY_DATABASE_URL"), "database URL: postgres://... (default: embedded SQLite in --data; env EDDY_DATABASE_URL)")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long a graceful shutdown waits for requests to finish")
	f.DurationVar(&o.heartbeat, "heartbeat", 15*time.Second, "how long a watch stream may stay idle before the server sends the heartbeat {}")
	f.DurationVar(&o.retainAge, "retain-age", 0, "prune commits older than this, e.g. 720h (default 0: keep)")
	f.Int64Var(&o.retainRows, "retain-rows", 0, "keep at most this many newest commits per space (default 0: keep all)")
	f.DurationVar(&o.housekeepInterval, "housekeep-interval", changelog.DefaultHousekeepInterval, "how often retention and receipt expiry run")
	f.DurationVar(&o.viewSessionTTL, "bootstrap-retry-window", views.DefaultSessionTTL, "how long a frozen view bootstrap session keeps its pages for retries; later retries answer bootstrap_session_expired")
	f.DurationVar(&o.clientRetention, "client-retention", changelog.DefaultClientRetention, "how long a push client idle since its last ordinal is kept; later pushes of its id are gaps")
	f.Float64Var(&o.safeWindowSeconds, "safe-window-seconds", journal.DefaultSafeWindow.Seconds(), "journal pages hold back commits younger than this (published as safeWindowSeconds)")
	f.Float64Var(&o.journalRetentionDays, "journal-retention-days", journal.DefaultRetention.Hours()/24, "how long a journal session's cursors are accepted, from its creation, in days (fractions allowed; published as journalRetentionDays)")
	f.StringVar(&o.durability, "durability", eddy.DurabilityStrict, "strict: a write is acknowledged once on disk; relaxed: SQLite synchronous=NORMAL / PostgreSQL synchronous_commit=off, a power loss may lose the last moments of acknowledged writes, never corrupts or reorders")
	f.DurationVar(&o.gcMinInterval, "gc-min-interval", gcpace.DefaultMinInterval, "under load, space garbage collections at least this far apart at the allocation rate measured (the heap grows by at most 64 MiB more for it; 0: the runtime's own pacing; ignored when GOGC is set)")
	f.BoolVar(&o.noTriggers, "no-triggers", false, "do not evaluate triggers or run deliveries in this process")
	f.DurationVar(&o.leaseTTL, "lease-ttl", engine.DefaultLeaseTTL, "how long a trigger lease lives unrenewed; another process takes over a dead holder's triggers after it")
	f.DurationVar(&o.triggerPoll, "trigger-poll", engine.DefaultPoll, "how often triggers re-check their space without a commit notification")
	f.IntVar(&o.triggerBatch, "trigger-batch", engine.DefaultBatch, "rows judged per evaluation transaction")
	o.ops.bind(cmd)
	o.limits.bind(f)
	f.StringSliceVar(&o.webhookAllow, "webhook-allow", nil, "webhook destinations allowed (CIDRs, addresses, host names, *.domain; repeat or comma-separate); default: all but the denied")
	f.StringSliceVar(&o.webhookDeny, "webhook-deny", nil, "webhook destinations denied besides link-local and cloud metadata addresses, which are always denied")
}

// validate checks the flag values a usage error must reject.
func (o *serveOptions) validate() error {
	switch {
	case o.heartbeat <= 0:
		return usagef("--heartbeat must be positive")
	case o.durability != eddy.DurabilityStrict && o.durability != eddy.DurabilityRelaxed:
		return usagef("--durability must be strict or relaxed")
	case o.gcMinInterval < 0 || o.gcMinInterval > time.Minute:
		return usagef("--gc-min-interval must be between 0 and 1m")
	case o.viewSessionTTL <= 0:
		return usagef("--bootstrap-retry-window must be positive")
	case o.clientRetention <= 0:
		return usagef("--client-retention must be positive")
	case o.safeWindowSeconds <= 0 || o.safeWindowSeconds > 3600:
		return usagef("--safe-window-seconds must be above 0 and at most 3600")
	case o.journalRetentionDays <= 0 || o.journalRetentionDays > 3650:
		return usagef("--journal-retention-days must be above 0 and at most 3650")
	case o.retainAge < 0:
		return usagef("--retain-age must not be negative")
	case o.retainRows < 0:
		return usagef("--retain-rows must not be negative")
	case o.housekeepInterval <= 0:
		return usagef("--housekeep-interval must be positive")
	case o.leaseTTL < 300*time.Millisecond:
		return usagef("--lease-ttl must be at least 300ms")
	case o.triggerPoll <= 0:
		return usagef("--trigger-poll must be positive")
	case o.triggerBatch < 1 || o.triggerBatch > 100_000:
		return usagef("--trigger-batch must be between 1 and 100000")
	}
	if _, err := functions.NewEgress(o.webhookAllow, o.webhookDeny); err != nil {
		return usagef("--webhook-allow/--webhook-deny: %v", err)
	}
	if err := o.ops.validate(); err != nil {
		return err
	}
	return o.limits.validate()
}

// config is the eddy.Config the options select.
func (o *serveOptions) config(data string, logger *slog.Logger) eddy.Config {
	return eddy.Config{DataDir: data, DatabaseURL: o.database, Logger: logger, Heartbeat: o.heartbeat,
		Retention:         changelog.Retention{MaxAge: o.retainAge, MaxRows: o.retainRows},
		HousekeepInterval: o.housekeepInterval,
		NoEngine:          o.noTriggers,
		Durability:        o.durability,
		WebhookAllow:      o.webhookAllow,
		WebhookDeny:       o.webhookDeny,
		ViewSessionTTL:    o.viewSessionTTL,
		Watch:             o.limits.watch(),
		ClientRetention:   o.clientRetention,
		JournalSafeWindow: time.Duration(o.safeWindowSeconds * float64(time.Second)),
		JournalRetention:  time.Duration(o.journalRetentionDays * float64(24*time.Hour)),
		Engine:            engine.Options{LeaseTTL: o.leaseTTL, Poll: o.triggerPoll, Batch: o.triggerBatch}}
}

// serve runs the server until ctx ends or SIGINT/SIGTERM arrives. It
// listens first and answers the probes while the store migrates (/readyz
// is 503 until the server is built), then serves the API.
func (a *app) serve(ctx context.Context, o serveOptions) (err error) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The log goes out in batches (one write per ~100 ms of access log
	// lines, not one per request); WARN and above at once.
	out := logbuf.New(a.stderr, 64<<10, 100*time.Millisecond)
	defer out.Close()
	logger := o.ops.newLogger(out)
	logger = slog.New(logbuf.NewHandler(logger.Handler(), out))
	tracing, err := telemetry.StartTracing(ctx, a.getenv, version)
	if err != nil {
		return usagef("%v", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.shutdownTimeout)
		defer cancel()
		err = errors.Join(err, tracing.Shutdown(sctx))
	}()

	defer o.startGCPace(a.getenv, logger)()

	var lc net.ListenConfig
	raw, err := lc.Listen(ctx, "tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ln := server.Listen(raw, o.limits.conns())
	var h swapHandler
	h.set(server.Starting(logger, "migrations are running"))
	srv := server.HTTPServer(&h, o.limits.conns(), slog.NewLogLogger(logger.Handler(), slog.LevelWarn))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("starting: probes answer on http://"+ln.Addr().String()+" (/readyz is 503 until ready)", "addr", ln.Addr().String(), "traces", tracing.Exporting)

	e, err := eddy.Open(ctx, o.config(a.data, logger))
	if err != nil {
		return errors.Join(err, closeNow(srv, served))
	}
	defer func() {
		if cerr := e.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close: %w", cerr))
		}
	}()
	if err := a.bootstrapAdmin(ctx, e, logger); err != nil {
		return errors.Join(err, closeNow(srv, served))
	}
	cfg := e.ServerConfig()
	cfg.Logger, cfg.Version, cfg.CORSOrigins, cfg.WhenBudget = logger, version, o.ops.corsOrigins, o.limits.whenBudget()
	srvAPI, err := server.New(cfg)
	if err != nil {
		return errors.Join(err, closeNow(srv, served))
	}
	h.set(srvAPI.Handler())
	logger.Info("listening on http://"+ln.Addr().String(), "addr", ln.Addr().String(), "data", a.data)

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	// ctx is done: shut down on a fresh deadline that keeps its values.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.shutdownTimeout)
	defer cancel()
	// Watch streams never finish on their own: end them first, with the
	// terminal unavailable frame, so Shutdown need not wait them out.
	if err := e.Hub().Stop(sctx); err != nil {
		logger.Warn("watch streams did not end in time", "err", err)
	}
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// startGCPace spaces garbage collections out by --gc-min-interval unless
// the environment sets GOGC (the operator's choice wins), and returns what
// stops it.
func (o *serveOptions) startGCPace(getenv func(string) string, logger *slog.Logger) (stop func()) {
	stop, gogc := gcpace.StartUnlessGOGC(o.gcMinInterval, getenv)
	if gogc != "" {
		logger.Info("GOGC is set: the runtime paces garbage collection", "GOGC", gogc)
	}
	return stop
}

// closeNow closes a server that failed to start and waits for its Serve
// to return.
func closeNow(srv *http.Server, served <-chan error) error {
	if err := srv.Close(); err != nil {
		return fmt.Errorf("close listener: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// bootstrapAdmin makes sure an admin token exists and prints it when it was
// just created.
func (a *app) bootstrapAdmin(ctx context.Context, e *eddy.Eddy, logger *slog.Logger) error {
	path := filepath.Join(e.DataDir(), tokenFile)
	secret, created, err := auth.BootstrapAdmin(ctx, e.Auth(), path)
	if err != nil {
		return fmt.Errorf("bootstrap admin token: %w", err)
	}
	switch {
	case created:
		fmt.Fprintf(a.stdout, "admin token: %s\n(stored in %s; the CLI reads it from there, or set EDDY_TOKEN)\n", secret, path)
	case secret == "":
		logger.Warn("the store already holds an admin token, so none was written to " + path +
			"; use the one you have (EDDY_TOKEN, or copy it there)")
	default:
		logger.Info("admin token in " + path)
	}
	return nil
}
