package client

import (
	"context"
	"net/http"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/store"
)

// Token is an API token as listed (never its secret).
type Token = store.Token

// Token roles.
const (
	RoleAdmin  = auth.RoleAdmin
	RoleWriter = auth.RoleWriter
	RoleReader = auth.RoleReader
	// AllSpaces is the TokenParams.Space of a token bound to every space.
	AllSpaces = auth.AllSpaces
	// ScopeLogRead lets a non-admin token pull the raw log and causes.
	ScopeLogRead = auth.ScopeLogRead
)

// TokenParams is the body of a token creation. Space is a space name or
// "*" (every space).
type TokenParams struct {
	Space       string   `json:"space"`
	Role        string   `json:"role"`
	Actor       string   `json:"actor,omitempty"`
	Types       []string `json:"types,omitempty"`
	Scopes      []string `json:"scopes,omitempty"`
	User        string   `json:"user,omitempty"`
	Application string   `json:"application,omitempty"`
}

// CreatedToken answers CreateToken: the id and the secret, shown this
// once.
type CreatedToken struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

// CreateToken creates a token (admin).
func (c *Client) CreateToken(ctx context.Context, p TokenParams) (CreatedToken, error) {
	var t CreatedToken
	_, err := c.callJSON(ctx, send(http.MethodPost, apiPath("tokens"), p), &t)
	return t, err
}

// Tokens lists the tokens an admin may see.
func (c *Client) Tokens(ctx context.Context) ([]Token, error) {
	var out struct {
		Tokens []Token `json:"tokens"`
	}
	_, err := c.callJSON(ctx, get(apiPath("tokens"), nil), &out)
	return out.Tokens, err
}

// RevokeToken revokes the token id.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	_, err := c.do(ctx, send(http.MethodDelete, apiPath("tokens", id), nil))
	return err
}
