package server

import (
	"net/http"
)

// whoamiAnswer is the token a request was made with, without its secret.
type whoamiAnswer struct {
	ID          string   `json:"id"`
	Space       string   `json:"space"`
	Role        string   `json:"role"`
	Actor       string   `json:"actor"`
	Types       []string `json:"types,omitempty"`
	Scopes      []string `json:"scopes,omitempty"`
	User        string   `json:"user,omitempty"`
	Application string   `json:"application,omitempty"`
}

// whoami answers GET /api/v1/whoami: what the request's token is, so a
// client (the console) can show what it may do. Any token may ask.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) error {
	if err := checkParams(r.URL.Query(), nil, nil); err != nil {
		return err
	}
	p := principal(r)
	s.writeJSON(w, r, http.StatusOK, whoamiAnswer{
		ID: p.TokenID, Space: p.Space, Role: p.Role, Actor: p.Actor, Types: p.Types, Scopes: p.Scopes,
		User: p.User, Application: p.Application,
	})
	return nil
}
