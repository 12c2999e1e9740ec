package auth

import "slices"

// Roles a token may have.
const (
	// RoleAdmin may do everything, including raw log reads, pruning and
	// token management.
	RoleAdmin = "admin"
	// RoleWriter may read and write entities.
	RoleWriter = "writer"
	// RoleReader may read changes, history, entities and views.
	RoleReader = "reader"
)

// ScopeLogRead grants raw log pulls to a non-admin token.
const ScopeLogRead = "log:read"

// AllSpaces is the Space of a token bound to every space.
const AllSpaces = "*"

var (
	roles  = []string{RoleAdmin, RoleWriter, RoleReader}
	scopes = []string{ScopeLogRead}
)

// Principal is what an authenticated request acts as.
type Principal struct {
	TokenID string
	// Space is the space the token is bound to, or AllSpaces.
	Space string
	Role  string
	// Actor authors the principal's writes.
	Actor string
	// Types, when not empty, is the allow-list of entity types the
	// principal may read (and, for writers, write).
	Types []string
	// Scopes are extra grants such as ScopeLogRead.
	Scopes []string
	// User is the user the principal acts for: access rules are judged
	// for it ("" for a token without one). Application, with User,
	// identifies a journal client.
	User        string
	Application string
}

// CanAccessSpace reports whether the principal may use a space at all.
func (p *Principal) CanAccessSpace(space string) bool {
	return p.Space == AllSpaces || p.Space == space
}

// CanWrite reports whether the principal may write entities.
func (p *Principal) CanWrite() bool { return p.Role == RoleAdmin || p.Role == RoleWriter }

// IsAdmin reports whether the principal is an admin.
func (p *Principal) IsAdmin() bool { return p.Role == RoleAdmin }

// Has reports whether the principal holds a scope; an admin holds every
// scope.
func (p *Principal) Has(scope string) bool {
	return p.IsAdmin() || slices.Contains(p.Scopes, scope)
}

// canReadType is the type allow-list: an empty list admits every type.
func (p *Principal) canReadType(typ string) bool {
	return len(p.Types) == 0 || slices.Contains(p.Types, typ)
}
