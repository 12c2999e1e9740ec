package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/eddy-run/eddy/client"
)

// conn is one run's connection to the server: the public Go client, the
// handle of the space the global flags name, and where the token came
// from (for error messages).
type conn struct {
	*client.Client
	sp     *client.Space
	server string
	source string
}

// connect returns the connection the global flags describe: the server
// from --server, EDDY_SERVER or the current context, the token found by
// findToken.
func (a *app) connect() (*conn, error) {
	tok, source, err := a.findToken()
	if err != nil {
		return nil, err
	}
	server := a.serverURL()
	c, err := client.New(server, client.Options{Token: tok, UserAgent: "eddy-cli/" + buildVersion(), Timeout: 60 * time.Second})
	if err != nil {
		return nil, usagef("--server %q: want http(s)://host:port", server)
	}
	a.tokenSource = source
	return &conn{Client: c, sp: c.Space(a.spaceName()), server: server, source: source}, nil
}

// withTokenSource adds where the token came from to an unauthorized or
// forbidden answer, so a user knows which token the server refused.
func (a *app) withTokenSource(err error) error {
	if a.tokenSource == "" {
		return err
	}
	switch client.CodeOf(err) {
	case "unauthorized", "forbidden":
		return &sourcedError{err: err, source: a.tokenSource}
	}
	return err
}

// sourcedError is a refused token's error, naming the token's source.
type sourcedError struct {
	err    error
	source string
}

func (e *sourcedError) Error() string {
	return fmt.Sprintf("%v (token from %s)", e.err, e.source)
}

func (e *sourcedError) Unwrap() error { return e.err }

// problemOf returns the server's problem in err, if there is one.
func problemOf(err error) (*client.Error, bool) {
	var pe *client.Error
	ok := errors.As(err, &pe)
	return pe, ok
}

// plainErr shortens the client's stream errors for messages
// ("client: stream ended" is "stream ended").
func plainErr(err error) string {
	return strings.TrimPrefix(err.Error(), "client: ")
}
