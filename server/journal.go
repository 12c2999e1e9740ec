package server

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/eddy-run/eddy/journal"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// journalRoutes registers the per-user journal (DESIGN section 9).
func (s *Server) journalRoutes() {
	s.handle("GET /api/v1/spaces/{space}/journal/capabilities", s.journalCapabilities)
	s.handle("POST /api/v1/spaces/{space}/journal/sessions", s.journalSession)
	s.handle("GET /api/v1/spaces/{space}/journal", s.journalPage)
	s.handle("GET /api/v1/spaces/{space}/journal/fetch", s.journalFetch)
	s.handle("POST /api/v1/spaces/{space}/journal/state", s.journalState)
}

// journalClient authorizes a journal request (any token bound to the
// space; the service asks for its user and application) and returns the
// client it acts for, judged by the principal's one readability rule.
func (s *Server) journalClient(r *http.Request, space string, allowed ...string) (journal.Client, error) {
	p, err := authorize(r, space, accessRead)
	if err != nil {
		return journal.Client{}, err
	}
	if err := checkParams(r.URL.Query(), allowed, nil); err != nil {
		return journal.Client{}, err
	}
	if _, err := s.log.Space(r.Context(), space); err != nil {
		return journal.Client{}, err
	}
	rd, err := s.auth.Reader(r.Context(), p, space)
	if err != nil {
		return journal.Client{}, err
	}
	return journal.Client{User: p.User, Application: p.Application, Types: p.Types, Reader: rd}, nil
}

// journalCapabilities answers GET .../journal/capabilities.
func (s *Server) journalCapabilities(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	if _, err := authorize(r, space, accessRead); err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	if _, err := s.log.Space(r.Context(), space); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, s.journal.Capabilities())
	return nil
}

// journalSession answers POST .../journal/sessions (an empty body or {}).
func (s *Server) journalSession(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	c, err := s.journalClient(r, space)
	if err != nil {
		return err
	}
	if err := decodeOptional(r, &struct{}{}); err != nil {
		return err
	}
	ses, err := s.journal.CreateSession(r.Context(), space, c)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, ses)
	return nil
}

// journalPage answers GET .../journal?cursor=C&limit=N.
func (s *Server) journalPage(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	c, err := s.journalClient(r, space, "cursor", "limit")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := journalLimit(q)
	if err != nil {
		return err
	}
	page, err := s.journal.Read(r.Context(), journal.ReadParams{Space: space, Client: c, Cursor: q.Get("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, page)
	return nil
}

// journalFetch answers GET .../journal/fetch?token=T&after=K&limit=N.
func (s *Server) journalFetch(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	c, err := s.journalClient(r, space, "token", "after", "limit")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := journalLimit(q)
	if err != nil {
		return err
	}
	page, err := s.journal.Fetch(r.Context(), journal.FetchParams{Space: space, Client: c, Token: q.Get("token"), After: q.Get("after"), Limit: limit})
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, page)
	return nil
}

// stateBody is the body of POST .../journal/state.
type stateBody struct {
	IDs *[]store.EntityKey `json:"ids"`
}

// journalState answers POST .../journal/state {"ids": [...]}.
func (s *Server) journalState(w http.ResponseWriter, r *http.Request) error {
	space := r.PathValue("space")
	c, err := s.journalClient(r, space)
	if err != nil {
		return err
	}
	var body stateBody
	if err := decodeJSON(r, &body, true); err != nil {
		return err
	}
	if body.IDs == nil {
		return problem.New(problem.BadRequest, "ids: required: a list of {\"type\", \"id\"}").With("field", "ids")
	}
	res, err := s.journal.State(r.Context(), space, c, *body.IDs)
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"results": res})
	return nil
}

// journalLimit parses an optional limit (the service checks its range;
// absent is the page limit).
func journalLimit(q url.Values) (int, error) {
	if !q.Has("limit") {
		return 0, nil
	}
	n, err := strconv.Atoi(q.Get("limit"))
	if err != nil || n < 1 {
		return 0, problem.Param("limit", "%q is not a positive integer", q.Get("limit"))
	}
	return n, nil
}
