package eddy

import (
	"fmt"
	"net/http"

	"github.com/eddy-run/eddy/server"
)

// ServerConfig returns the HTTP API's configuration wired to this eddy's
// services (log, auth, watch hub, definitions, views, journal, trigger
// engine, metrics and logger). Set what the embedding program decides
// (Version, CORSOrigins, MaxBodyBytes, ...) and pass it to server.New.
func (e *Eddy) ServerConfig() server.Config {
	return server.Config{
		Log: e.log, Auth: e.auth, Hub: e.hub, Definitions: e.defs, Views: e.views, Journal: e.journal,
		Engine: e.eng, Metrics: e.tel, Logger: e.logger,
	}
}

// Handler returns the HTTP API (every route of DESIGN.md, under
// /api/v1) served by this eddy, for a program that embeds it:
//
//	e, err := eddy.Open(ctx, eddy.Config{DataDir: "data"})
//	...
//	http.ListenAndServe("127.0.0.1:7070", e.Handler())
//
// Stop the hub (Close does) before shutting the HTTP server down so watch
// streams end with their terminal frame.
func (e *Eddy) Handler() http.Handler {
	s, err := server.New(e.ServerConfig())
	if err != nil {
		// Unreachable: Open builds every service ServerConfig names.
		panic(fmt.Sprintf("eddy: %v", err))
	}
	return s.Handler()
}
