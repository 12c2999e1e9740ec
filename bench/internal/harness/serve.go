package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/server"
	"github.com/eddy-run/eddy/store"
)

// Served is eddy's HTTP API (server.New, as `eddy serve` wires it) on a
// loopback port.
type Served struct {
	// URL is the base URL, http://127.0.0.1:PORT.
	URL string
	// Token is an admin token's secret.
	Token string
	srv   *http.Server
}

// Serve starts eddy's HTTP API with an admin token. Stop it before
// closing e.
func (e *Eddy) Serve(ctx context.Context) (*Served, error) {
	_, secret, err := e.Auth().Create(ctx, auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin})
	if err != nil {
		return nil, fmt.Errorf("eddy: create token: %w", err)
	}
	cfg := e.ServerConfig()
	cfg.Logger, cfg.Version = Discard(), "bench"
	api, err := server.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("eddy: %w", err)
	}
	l, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("eddy: listen: %w", err)
	}
	h := api.Handler()
	s := &Served{URL: "http://" + l.Addr().String(), Token: secret, srv: &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// ServeAsCLI starts eddy's HTTP API wired as `eddy serve` wires it
// (Eddy.ServerConfig, server.Listen and server.HTTPServer with their
// default limits, the access log formatted at info level and discarded)
// with a token of role for Space only. Stop it before closing e.
func (e *Eddy) ServeAsCLI(ctx context.Context, role string) (*Served, error) {
	_, secret, err := e.Auth().Create(ctx, auth.CreateParams{Space: Space, Role: role})
	if err != nil {
		return nil, fmt.Errorf("eddy: create token: %w", err)
	}
	cfg := e.ServerConfig()
	cfg.Logger, cfg.Version = Discard(), "bench"
	api, err := server.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("eddy: %w", err)
	}
	raw, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("eddy: listen: %w", err)
	}
	logger := Discard()
	srv := server.HTTPServer(api.Handler(), server.ConnLimits{}, slog.NewLogLogger(logger.Handler(), slog.LevelWarn))
	s := &Served{URL: "http://" + raw.Addr().String(), Token: secret, srv: srv}
	ln := server.Listen(raw, server.ConnLimits{})
	go func() { _ = srv.Serve(ln) }()
	return s, nil
}

// WatchPath is the path of the watch stream of Space from seq from
// (exclusive; negative for the head).
func WatchPath(from int64) string {
	if from < 0 {
		return "/api/v1/spaces/" + Space + "/changes?watch=1"
	}
	return fmt.Sprintf("/api/v1/spaces/%s/changes?watch=1&from=%d", Space, from)
}

// Stop closes the listener and the connections not taken over by the
// watch hub (those end when eddy closes).
func (s *Served) Stop() error { return s.srv.Close() }

// Define saves a function or a trigger ("function" or "trigger") of
// Space from its JSON.
func (e *Eddy) Define(ctx context.Context, kind, name, def string) error {
	var err error
	if kind == "function" {
		_, _, err = e.Definitions().PutFunction(ctx, Space, name, []byte(def))
	} else {
		_, _, err = e.Definitions().PutTrigger(ctx, Space, name, []byte(def))
	}
	if err != nil {
		return fmt.Errorf("eddy: put %s %s: %w", kind, name, err)
	}
	return nil
}

// WaitCursor polls the trigger's cursor until it reaches seq or ctx ends.
func (e *Eddy) WaitCursor(ctx context.Context, trigger string, seq int64) error {
	for {
		st, err := e.Store().TriggerStateGet(ctx, Space, trigger)
		switch {
		case err == nil && st.Cursor >= seq:
			return nil
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("eddy: trigger state: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("eddy: trigger %s waiting for %d: %w", trigger, seq, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
