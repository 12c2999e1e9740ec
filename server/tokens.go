package server

import (
	"net/http"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/store"
)

// tokenBody is the body of POST /api/v1/tokens.
type tokenBody struct {
	Space       string   `json:"space"`
	Role        string   `json:"role"`
	Actor       string   `json:"actor"`
	Types       []string `json:"types"`
	Scopes      []string `json:"scopes"`
	User        string   `json:"user"`
	Application string   `json:"application"`
}

// createToken answers POST /api/v1/tokens with the new id and its secret,
// shown this once.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error {
	p, err := adminForTokens(r)
	if err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	var b tokenBody
	if err := decodeJSON(r, &b, true); err != nil {
		return err
	}
	if !p.CanAccessSpace(b.Space) {
		return forbidden("token is not bound to space %q", b.Space)
	}
	if b.Space != auth.AllSpaces && b.Space != "" && validSpace(b.Space) == nil {
		if _, err := s.log.Space(r.Context(), b.Space); err != nil {
			return err
		}
	}
	t, secret, err := s.auth.Create(r.Context(), auth.CreateParams{
		Space: b.Space, Role: b.Role, Actor: b.Actor, Types: b.Types, Scopes: b.Scopes,
		User: b.User, Application: b.Application,
	})
	if err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusCreated, map[string]string{"id": t.ID, "token": secret})
	return nil
}

// listTokens answers GET /api/v1/tokens without secrets. An admin bound to
// one space sees that space's tokens.
func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) error {
	p, err := adminForTokens(r)
	if err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	ts, err := s.auth.List(r.Context())
	if err != nil {
		return err
	}
	out := make([]store.Token, 0, len(ts))
	for _, t := range ts {
		if p.Space == auth.AllSpaces || t.Space == p.Space {
			out = append(out, t)
		}
	}
	s.writeJSON(w, r, http.StatusOK, map[string]any{"tokens": out})
	return nil
}

// revokeToken answers DELETE /api/v1/tokens/{id} with 204.
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) error {
	p, err := adminForTokens(r)
	if err != nil {
		return err
	}
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	id := r.PathValue("id")
	if p.Space != auth.AllSpaces && !s.ownsToken(r, p, id) {
		return forbidden("token %q is not bound to space %q", id, p.Space)
	}
	if err := s.auth.Revoke(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ownsToken reports whether token id is bound to the admin's space (an
// unknown id counts as owned, so revoking it answers not_found).
func (s *Server) ownsToken(r *http.Request, p *auth.Principal, id string) bool {
	ts, err := s.auth.List(r.Context())
	if err != nil {
		return false
	}
	for _, t := range ts {
		if t.ID == id {
			return t.Space == p.Space
		}
	}
	return true
}

func adminForTokens(r *http.Request) (*auth.Principal, error) {
	p := principal(r)
	if !p.IsAdmin() {
		return nil, forbidden("managing tokens needs role admin (token has %s)", p.Role)
	}
	return p, nil
}
