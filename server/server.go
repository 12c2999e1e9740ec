package server

import (
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/causality"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/definitions"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/journal"
	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/views"
	"github.com/eddy-run/eddy/watch"
)

// DefaultMaxBodyBytes bounds request bodies when Config.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 1 << 20

// Config wires a Server.
type Config struct {
	Log  *changelog.Log
	Auth *auth.Service
	// Hub serves ?watch=1 streams; nil answers them unavailable.
	Hub *watch.Hub
	// Definitions manages functions and triggers; nil builds one over Log.
	Definitions *definitions.Service
	// Views serves view sync; nil builds one over Log and Hub.
	Views *views.Service
	// Journal serves the per-user journal; nil builds one over Log with
	// the default settings.
	Journal *journal.Service
	// Engine answers the trigger operations (enable, disable, reset,
	// replay, deliveries, stances, fences) and a trigger's status; nil
	// answers them unavailable.
	Engine *engine.Engine
	Logger *slog.Logger // nil = slog.Default()
	// Version is reported by discovery (default "dev").
	Version string
	// MaxBodyBytes bounds request bodies (default 1 MiB); larger bodies
	// are payload_too_large.
	MaxBodyBytes int64
	// WhenBudget bounds the CEL evaluation of one request's when across
	// the rows it judges (a page, or one batch of a watch stream); zero
	// fields take predicate.DefaultBudget's.
	WhenBudget predicate.Budget
	// Metrics, if set, records every request and serves GET /metrics
	// WITHOUT authentication, like /healthz: bind the server to loopback
	// or protect /metrics at the proxy.
	Metrics Metrics
	// CORSOrigins are the browser origins (scheme://host[:port], or "*"
	// for any) allowed to call the API cross-origin; none = CORS off.
	CORSOrigins []string
	// TracerProvider starts the server's request spans; nil = the global
	// provider (a no-op unless telemetry.StartTracing installed one).
	TracerProvider trace.TracerProvider
}

// Metrics records HTTP request metrics and serves them
// (telemetry.Telemetry implements it).
type Metrics interface {
	// ObserveHTTP records one request: route is the ServeMux pattern
	// that served it without its method, "" when none did.
	ObserveHTTP(method, route string, status int, elapsed time.Duration)
	// Handler serves the metrics at GET /metrics.
	Handler() http.Handler
}

// Server serves eddy's HTTP API.
type Server struct {
	log            *changelog.Log
	auth           *auth.Service
	hub            *watch.Hub
	defs           *definitions.Service
	views          *views.Service
	journal        *journal.Service
	engine         *engine.Engine
	logger         *slog.Logger
	version        string
	maxBody        int64
	metrics        Metrics
	whenBudget     predicate.Budget
	corsOrigins    []string
	tracerProvider trace.TracerProvider
	causeKeys      *causality.Keyring
	mux            *http.ServeMux
	patterns       []string // every pattern registered on mux, in order
	handler        http.Handler
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	s := &Server{
		log:            cfg.Log,
		auth:           cfg.Auth,
		hub:            cfg.Hub,
		defs:           cfg.Definitions,
		views:          cfg.Views,
		journal:        cfg.Journal,
		engine:         cfg.Engine,
		logger:         cfg.Logger,
		version:        cfg.Version,
		maxBody:        cfg.MaxBodyBytes,
		metrics:        cfg.Metrics,
		whenBudget:     cfg.WhenBudget,
		corsOrigins:    cfg.CORSOrigins,
		tracerProvider: cfg.TracerProvider,
		mux:            http.NewServeMux(),
	}
	if cfg.Log != nil {
		s.causeKeys = causality.NewKeyring(cfg.Log.Store())
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.defs == nil && cfg.Log != nil {
		exec := cfg.Engine
		if exec == nil {
			// Never started: it only runs dry runs and manual runs.
			exec = engine.New(cfg.Log, nil, engine.Options{Logger: s.logger})
		}
		s.defs = definitions.New(cfg.Log, definitions.Options{Executor: exec})
	}
	if s.views == nil && cfg.Log != nil {
		s.views = views.New(cfg.Log, views.Options{Hub: cfg.Hub, Logger: s.logger})
	}
	if s.journal == nil && cfg.Log != nil {
		s.journal = journal.New(cfg.Log, journal.Options{Logger: s.logger})
	}
	if s.tracerProvider == nil {
		s.tracerProvider = otel.GetTracerProvider()
	}
	if s.version == "" {
		s.version = "dev"
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	s.routes()
	s.handler = s.middleware(http.HandlerFunc(s.dispatch))
	return s
}

// Handler returns the server's root handler.
func (s *Server) Handler() http.Handler { return s.handler }
