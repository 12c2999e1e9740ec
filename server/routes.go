package server

import (
	"net/http"
	"net/url"
	"strings"
)

// routes registers every endpoint of this server.
func (s *Server) routes() {
	s.handle("GET /healthz", s.healthz)
	s.handle("GET /readyz", s.readyz)
	if s.metrics != nil {
		s.handleHTTP("GET /metrics", s.metrics.Handler())
	}

	s.handle("GET /api/v1", s.discovery)
	s.handle("GET /api/v1/spaces/{space}", s.getSpace)
	s.handle("PUT /api/v1/spaces/{space}", s.putSpace)
	s.handle("POST /api/v1/spaces/{space}/prune", s.prune)

	s.handle("GET /api/v1/spaces/{space}/types", s.listTypes)
	s.handle("GET /api/v1/spaces/{space}/types/{type}", s.getType)
	s.handle("PUT /api/v1/spaces/{space}/types/{type}", s.putType)
	s.handle("DELETE /api/v1/spaces/{space}/types/{type}", s.deleteType)
	s.handle("POST /api/v1/spaces/{space}/apply", s.applyDefinitions)
	s.handle("GET /api/v1/spaces/{space}/apply", s.exportDefinitions)

	s.handle("GET /api/v1/spaces/{space}/entities/{type}", s.listEntities)
	s.handle("POST /api/v1/spaces/{space}/entities/{type}", s.createEntity)
	s.handle("GET /api/v1/spaces/{space}/entities/{type}/{id}", s.getEntity)
	s.handle("PUT /api/v1/spaces/{space}/entities/{type}/{id}", s.putEntity)
	s.handle("PATCH /api/v1/spaces/{space}/entities/{type}/{id}", s.patchEntity)
	s.handle("DELETE /api/v1/spaces/{space}/entities/{type}/{id}", s.deleteEntity)

	s.handle("POST /api/v1/spaces/{space}/mutations", s.mutations)
	s.handle("GET /api/v1/spaces/{space}/changes", s.changes)
	s.handle("GET /api/v1/spaces/{space}/changes/{seq}/causes", s.causes)
	s.handle("GET /api/v1/spaces/{space}/changes/{seq}/stances", s.stances)
	s.handle("GET /api/v1/spaces/{space}/log", s.pull)

	s.handle("GET /api/v1/spaces/{space}/functions", s.listFunctions)
	s.handle("GET /api/v1/spaces/{space}/functions/{name}", s.getFunction)
	s.handle("PUT /api/v1/spaces/{space}/functions/{name}", s.putFunction)
	s.handle("DELETE /api/v1/spaces/{space}/functions/{name}", s.deleteFunction)
	s.handle("POST /api/v1/spaces/{space}/functions/{name}/test", s.testFunction)
	s.handle("GET /api/v1/spaces/{space}/triggers", s.listTriggers)
	s.handle("GET /api/v1/spaces/{space}/triggers/{name}", s.getTrigger)
	s.handle("PUT /api/v1/spaces/{space}/triggers/{name}", s.putTrigger)
	s.handle("DELETE /api/v1/spaces/{space}/triggers/{name}", s.deleteTrigger)
	s.handle("POST /api/v1/spaces/{space}/triggers/{name}/backtest", s.backtestTrigger)
	s.handle("POST /api/v1/spaces/{space}/triggers/{name}/run", s.runTrigger)
	s.handle("POST /api/v1/spaces/{space}/triggers/{name}/enable", s.enableTrigger)
	s.handle("POST /api/v1/spaces/{space}/triggers/{name}/disable", s.disableTrigger)
	s.handle("POST /api/v1/spaces/{space}/triggers/{name}/reset", s.resetTrigger)
	s.handle("POST /api/v1/spaces/{space}/triggers/{name}/replay", s.replayTrigger)
	s.handle("GET /api/v1/spaces/{space}/triggers/{name}/deliveries", s.listDeliveries)
	s.handle("POST /api/v1/spaces/{space}/deliveries/{id}/retry", s.retryDelivery)
	s.handle("POST /api/v1/spaces/{space}/deliveries/{id}/release", s.releaseDelivery)
	s.handle("POST /api/v1/spaces/{space}/deliveries/{id}/discard", s.discardDelivery)
	s.handle("GET /api/v1/spaces/{space}/fence", s.fence)
	s.viewRoutes()
	s.pushRoutes()
	s.journalRoutes()

	s.handle("POST /api/v1/tokens", s.createToken)
	s.handle("GET /api/v1/tokens", s.listTokens)
	s.handle("DELETE /api/v1/tokens/{id}", s.revokeToken)

	s.consoleRoutes()
}

// handlerFunc is a handler that returns its error for the problem
// renderer instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle registers h under pattern, rendering its errors. Every route
// refuses a malformed query string and, under /spaces/{space}, an
// invalid space name before h runs: one place, so no handler forgets.
func (s *Server) handle(pattern string, h handlerFunc) {
	spaced := strings.Contains(pattern, "{space}")
	s.handleHTTP(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := checkRequest(r, spaced)
		if err == nil {
			err = h(w, r)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	}))
}

// handleHTTP registers h under pattern and records the pattern (the
// OpenAPI test compares them with docs/openapi.yaml). Every route goes
// through here.
func (s *Server) handleHTTP(pattern string, h http.Handler) {
	s.patterns = append(s.patterns, pattern)
	s.mux.Handle(pattern, h)
}

// checkRequest refuses what no handler can serve: a query string that
// does not decode (url.Values would silently drop the bad parameter)
// and, when spaced, a space name that no space can have.
func checkRequest(r *http.Request, spaced bool) error {
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		return badRequest("malformed query string: %v", err).With("query", r.URL.RawQuery)
	}
	if spaced {
		return validSpace(r.PathValue("space"))
	}
	return nil
}

// dispatch routes a request. Requests no pattern serves (404, 405) are
// answered with problem objects instead of the mux's plain text.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	_, pattern := s.mux.Handler(r)
	if rec, ok := w.(*statusRecorder); ok {
		rec.pattern = pattern
	}
	if pattern == "" {
		w = &unroutedWriter{ResponseWriter: w, s: s, r: r}
	}
	s.mux.ServeHTTP(w, r)
}

// unroutedWriter turns the mux's plain-text 404 and 405 answers into
// problem objects.
type unroutedWriter struct {
	http.ResponseWriter
	s        *Server
	r        *http.Request
	replaced bool
}

func (u *unroutedWriter) WriteHeader(code int) {
	switch code {
	case http.StatusNotFound:
		u.replaced = true
		u.s.writeProblem(u.ResponseWriter, u.r, notFoundRoute(u.r))
	case http.StatusMethodNotAllowed:
		u.replaced = true
		u.s.writeMethodNotAllowed(u.ResponseWriter, u.r)
	default:
		u.ResponseWriter.WriteHeader(code)
	}
}

func (u *unroutedWriter) Write(b []byte) (int, error) {
	if u.replaced {
		return len(b), nil
	}
	return u.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (u *unroutedWriter) Unwrap() http.ResponseWriter { return u.ResponseWriter }
