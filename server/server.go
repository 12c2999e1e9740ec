package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
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
	// Log and Auth are required.
	Log  *changelog.Log
	Auth *auth.Service
	// Hub serves ?watch=1 streams; nil answers them unavailable.
	Hub *watch.Hub
	// Definitions manages functions and triggers (required).
	Definitions *definitions.Service
	// Views serves view sync (required).
	Views *views.Service
	// Journal serves the per-user journal (required).
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

// ErrIncompleteConfig reports a Config missing a dependency New needs;
// the error New returns wraps it and names each missing field.
var ErrIncompleteConfig = errors.New("server: incomplete config")

// New returns a Server for cfg. Log, Auth, Definitions, Views and Journal
// are required (eddy.(*Eddy).ServerConfig wires them all): a missing one
// is an error wrapping ErrIncompleteConfig that names it. Hub and Engine
// are optional: without them their routes answer unavailable.
func New(cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
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
		causeKeys:      causality.NewKeyring(cfg.Log.Store()),
		mux:            http.NewServeMux(),
	}
	if s.logger == nil {
		s.logger = slog.Default()
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
	return s, nil
}

// check returns an error naming every required dependency cfg lacks.
func (cfg *Config) check() error {
	var missing []string
	need := func(name string, absent bool) {
		if absent {
			missing = append(missing, name)
		}
	}
	need("Log", cfg.Log == nil)
	need("Auth", cfg.Auth == nil)
	need("Definitions", cfg.Definitions == nil)
	need("Views", cfg.Views == nil)
	need("Journal", cfg.Journal == nil)
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing %s", ErrIncompleteConfig, strings.Join(missing, ", "))
	}
	return nil
}

// Handler returns the server's root handler.
func (s *Server) Handler() http.Handler { return s.handler }
