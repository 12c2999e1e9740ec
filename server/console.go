package server

import "github.com/eddy-run/eddy/console"

// consoleRoutes mounts the web console (package console) at "/" and the
// endpoints the console reads beyond the rest of the API: who a token
// is, one row's commit, a row's causal tree, the deliveries of every
// trigger and bulk operations on them. The console's own files are
// public (withAuth lets console.Serves paths through); everything it
// shows comes from the API with the signed-in token.
func (s *Server) consoleRoutes() {
	h := console.Handler()
	for _, pattern := range console.Patterns {
		s.handleHTTP(pattern, h)
	}
	s.handle("GET /api/v1/whoami", s.whoami)
	s.handle("GET /api/v1/spaces/{space}/changes/{seq}", s.commit)
	s.handle("GET /api/v1/spaces/{space}/changes/{seq}/tree", s.tree)
	s.handle("GET /api/v1/spaces/{space}/deliveries", s.listSpaceDeliveries)
	s.handle("POST /api/v1/spaces/{space}/deliveries/bulk", s.bulkDeliveries)
}
