package server

import (
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

// authorizeType is authorize plus the principal's types allow-list.
func authorizeType(r *http.Request, space, typ string, need access) (*auth.Principal, error) {
	p, err := authorize(r, space, need)
	if err != nil {
		return nil, err
	}
	if !canUseType(p, typ) {
		return nil, forbidden("token may not access type %q", typ)
	}
	return p, nil
}

// canUseType asks the principal's one readability rule about a type.
func canUseType(p *auth.Principal, typ string) bool {
	return p.CanReadRecord(&store.Record{Type: typ})
}
