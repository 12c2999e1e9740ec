package server

import (
	"log/slog"
	"net/http"

	"github.com/eddy-run/eddy/problem"
)

// healthz answers 200 once the server accepts requests.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz answers 200 when the store answers.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.log.Spaces(r.Context()); err != nil {
		s.logger.WarnContext(r.Context(), "not ready", "err", err)
		return problem.New(problem.Unavailable, "store unavailable")
	}
	s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// Starting returns the handler a process serves while it starts, before
// its store is migrated and its server built: GET /healthz answers 200
// (the process is alive), GET /readyz and every other request answer
// 503 unavailable with reason (e.g. "migrations are running"), so
// orchestrators hold traffic back and clients retry.
func Starting(logger *slog.Logger, reason string) http.Handler {
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{logger: logger}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
			s.writeJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
			return
		}
		w.Header().Set("Retry-After", "1")
		s.writeProblem(w, r, problem.New(problem.Unavailable, "not ready: %s", reason))
	})
}
