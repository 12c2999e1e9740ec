package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/console"
	"github.com/eddy-run/eddy/problem"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	principalKey
)

// maxRequestID bounds a client-supplied X-Request-Id.
const maxRequestID = 128

// middleware wraps the router: request id, access log, trace span, panic
// recovery, CORS (preflights are answered before authentication),
// authentication, then the body limit.
func (s *Server) middleware(next http.Handler) http.Handler {
	return s.withRequestID(s.withAccessLog(s.withTracing(s.withRecovery(s.withCORS(s.withAuth(s.withBodyLimit(next)))))))
}

// withRequestID takes the request id from X-Request-Id (when sane) or
// generates one, and echoes it on the response.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// requestID returns the request id carried by ctx.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// withAccessLog logs one line per request and records it in the metrics.
func (s *Server) withAccessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if s.metrics != nil {
			s.metrics.ObserveHTTP(r.Method, s.route(r, rec), rec.status(), time.Since(start))
		}
		attrs := []slog.Attr{
			slog.String("request_id", requestID(r.Context())),
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.status()),
			slog.Int64("bytes", rec.bytes),
			slog.Duration("duration", time.Since(start)),
			slog.String("token", rec.tokenID),
		}
		if rec.traceID != "" {
			attrs = append(attrs, slog.String("trace_id", rec.traceID))
		}
		s.logger.LogAttrs(r.Context(), slog.LevelInfo, "http request", attrs...)
	})
}

// route returns the metrics route of a request: the pattern that served
// it (recorded by dispatch, else matched now, for requests refused
// before routing) without its method, "" when none matches.
func (s *Server) route(r *http.Request, rec *statusRecorder) string {
	pattern := rec.pattern
	if pattern == "" {
		_, pattern = s.mux.Handler(r)
	}
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return path
	}
	return pattern
}

// statusRecorder remembers the status and size of a response, the token
// that made the request (set by withAuth), the pattern that routed it
// (set by dispatch) and its trace id (set by withTracing).
type statusRecorder struct {
	http.ResponseWriter
	code    int
	bytes   int64
	tokenID string
	pattern string
	traceID string // the request's trace (set by withTracing), "" when none
}

func (rec *statusRecorder) WriteHeader(code int) {
	if rec.code == 0 {
		rec.code = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *statusRecorder) Write(b []byte) (int, error) {
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += int64(n)
	return n, err
}

// Flush supports streaming responses.
func (rec *statusRecorder) Flush() {
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	_ = http.NewResponseController(rec.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (rec *statusRecorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

func (rec *statusRecorder) status() int {
	if rec.code == 0 {
		return http.StatusOK
	}
	return rec.code
}

// wroteHeader reports whether the response has started.
func (rec *statusRecorder) wroteHeader() bool { return rec.code != 0 }

// withRecovery turns a panic into a logged 500 problem.
func (s *Server) withRecovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			s.logger.ErrorContext(r.Context(), "panic serving request",
				"request_id", requestID(r.Context()), "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if rec, ok := w.(*statusRecorder); ok && rec.wroteHeader() {
				return
			}
			s.writeProblem(w, r, problem.New(problem.Internal, "internal error"))
		}()
		next.ServeHTTP(w, r)
	})
}

// withBodyLimit bounds every request body to MaxBodyBytes.
func (s *Server) withBodyLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.maxBody {
			s.writeProblem(w, r, problem.New(problem.PayloadTooLarge, "request body is larger than %d bytes", s.maxBody))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
		next.ServeHTTP(w, r)
	})
}

// withAuth authenticates every request but the health probes and the
// metrics with its bearer token. There is no other anonymous access.
func (s *Server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.unauthenticated(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		p, err := s.authenticate(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if rec, ok := w.(*statusRecorder); ok {
			rec.tokenID = p.TokenID
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, p)))
	})
}

// unauthenticated reports whether path is served without a token: the
// health probes, /metrics when metrics are configured, and the console's
// files (they carry no data; the console reads the API with a token).
func (s *Server) unauthenticated(path string) bool {
	return path == "/healthz" || path == "/readyz" || (path == "/metrics" && s.metrics != nil) || console.Serves(path)
}

// authenticate reads "Authorization: Bearer <token>".
func (s *Server) authenticate(r *http.Request) (*auth.Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, problem.New(problem.Unauthorized, "missing Authorization: Bearer <token>")
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return nil, problem.New(problem.Unauthorized, "Authorization must be Bearer <token>")
	}
	return s.auth.Authenticate(r.Context(), strings.TrimSpace(token))
}

// principal returns the authenticated principal of a request.
func principal(r *http.Request) *auth.Principal {
	p, _ := r.Context().Value(principalKey).(*auth.Principal)
	if p == nil {
		// Unreachable behind withAuth; a principal with no rights.
		return &auth.Principal{Role: "none"}
	}
	return p
}
