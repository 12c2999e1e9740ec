package server

import (
	"errors"
	"net/http"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/store"
)

// access names what a request needs beyond authentication.
type access int

const (
	accessRead access = iota
	accessWrite
	accessAdmin
)

// authorize returns the principal of r if it may use space with the given
// access; otherwise forbidden.
func authorize(r *http.Request, space string, need access) (*auth.Principal, error) {
	p := principal(r)
	if !p.CanAccessSpace(space) {
		return nil, forbidden("token is not bound to space %q", space)
	}
	switch {
	case need == accessWrite && !p.CanWrite():
		return nil, forbidden("writing needs role writer or admin (token has %s)", p.Role)
	case need == accessAdmin && !p.IsAdmin():
		return nil, forbidden("this needs role admin (token has %s)", p.Role)
	}
	return p, nil
}

// readerFor is authorize plus the principal's Reader in space: the one
// place (package auth) every read path asks what may be read.
func (s *Server) readerFor(r *http.Request, space string, need access) (*auth.Reader, error) {
	p, err := authorize(r, space, need)
	if err != nil {
		return nil, err
	}
	return s.readerOf(r, p, space)
}

// readerOf returns p's Reader in space (not_found for an unknown space).
func (s *Server) readerOf(r *http.Request, p *auth.Principal, space string) (*auth.Reader, error) {
	rd, err := s.auth.Reader(r.Context(), p, space)
	if errors.Is(err, store.ErrNotFound) {
		_, err = s.log.Space(r.Context(), space) // the changelog's not_found
	}
	if err != nil {
		return nil, err
	}
	return rd, nil
}

// knownSpace returns the space as rd's request read it to find its
// policy (auth.Reader.Space), or nil when it was not read: one read of
// the space serves the request's access checks and its cursors.
func knownSpace(rd *auth.Reader) *store.Space {
	if sp, ok := rd.Space(); ok {
		return &sp
	}
	return nil
}

// readerType is readerFor plus the principal's types allow-list for typ
// (forbidden outside it).
func (s *Server) readerType(r *http.Request, space, typ string) (*auth.Reader, error) {
	rd, err := s.readerFor(r, space, accessRead)
	if err != nil {
		return nil, err
	}
	if !rd.CanReadType(typ) {
		return nil, forbidden("token may not access type %q", typ)
	}
	return rd, nil
}

// authorizeWrite is authorize for an entity write of typ: the principal's
// allow-list limits what it writes too (access rules limit reads only).
func authorizeWrite(r *http.Request, space, typ string) (*auth.Principal, error) {
	p, err := authorize(r, space, accessWrite)
	if err != nil {
		return nil, err
	}
	if !canUseType(p, typ) {
		return nil, forbidden("token may not access type %q", typ)
	}
	return p, nil
}

// canUseType asks the principal's allow-list (through auth's one rule,
// without access rules) about a type.
func canUseType(p *auth.Principal, typ string) bool {
	return auth.NewReader(p, nil).CanReadType(typ)
}
