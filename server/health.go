package server

import (
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
