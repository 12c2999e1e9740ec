package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// corsAllowHeaders are the request headers a browser may send
// cross-origin.
const corsAllowHeaders = "Authorization, Content-Type, If-Match, If-None-Match, Idempotency-Key, X-Request-Id, Traceparent, Tracestate, " + causeHeader

// corsExposeHeaders are the response headers a cross-origin script may
// read.
const corsExposeHeaders = "ETag, Eddy-Seq, Location, X-Request-Id, Retry-After"

// corsMethods are the methods the API serves.
const corsMethods = "GET, PUT, POST, PATCH, DELETE"

// corsMaxAge is how long a browser may cache a preflight answer (seconds).
const corsMaxAge = 600

// withCORS answers cross-origin requests from the configured origins:
// it adds the Access-Control headers to their responses and answers their
// preflight (OPTIONS with Access-Control-Request-Method) itself, before
// authentication, since a browser sends no token with a preflight.
// Requests from other origins are served as if CORS were off: the
// browser, not the server, then refuses the answer to the script.
func (s *Server) withCORS(next http.Handler) http.Handler {
	if len(s.corsOrigins) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		h := w.Header()
		h.Add("Vary", "Origin")
		if origin == "" || !s.corsAllowed(origin) {
			next.ServeHTTP(w, r)
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
			next.ServeHTTP(w, r)
			return
		}
		h.Add("Vary", "Access-Control-Request-Method")
		h.Add("Vary", "Access-Control-Request-Headers")
		h.Set("Access-Control-Allow-Methods", corsMethods)
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
		h.Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAge))
		w.WriteHeader(http.StatusNoContent)
	})
}

// corsAllowed reports whether origin is one of the configured origins
// ("*" allows every origin; bearer tokens, never cookies, carry the
// credentials, so no origin gains ambient authority).
func (s *Server) corsAllowed(origin string) bool {
	return slices.ContainsFunc(s.corsOrigins, func(o string) bool {
		return o == "*" || strings.EqualFold(o, origin)
	})
}
