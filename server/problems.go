package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// codeMethodNotAllowed is the code of a 405 answer; the catalogue has no
// code for it because no domain package can return it.
const codeMethodNotAllowed = "method_not_allowed"

// problemBody is the one error shape: {"error": {...}}.
type problemBody struct {
	Error *problem.Error `json:"error"`
}

// writeError renders err as a problem object. Errors outside the catalogue
// are internal: logged, and answered without their text.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	s.writeProblem(w, r, s.toProblem(r, err))
}

// toProblem maps an error onto the catalogue.
func (s *Server) toProblem(r *http.Request, err error) *problem.Error {
	var (
		pe   *problem.Error
		hu   *changelog.HistoryUnavailableError
		mbe  *http.MaxBytesError
		code string
	)
	switch {
	case errors.As(err, &pe):
		return pe
	case changelog.StoreUnavailable(err) != nil:
		s.logger.WarnContext(r.Context(), "store unavailable", "request_id", requestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "err", err)
		return changelog.StoreUnavailable(err)
	case errors.As(err, &hu):
		return problem.New(problem.Compacted, "%s", hu.Error()).With("horizon", hu.Horizon)
	case errors.As(err, &mbe):
		return problem.New(problem.PayloadTooLarge, "request body is larger than %d bytes", mbe.Limit)
	case errors.Is(err, store.ErrNotFound):
		return problem.New(problem.NotFound, "%s", err.Error())
	case errors.Is(err, store.ErrExists):
		return problem.New(problem.Conflict, "%s", err.Error())
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		code = problem.Unavailable
	default:
		code = problem.Internal
	}
	s.logger.ErrorContext(r.Context(), "request failed", "request_id", requestID(r.Context()),
		"method", r.Method, "path", r.URL.Path, "err", err)
	if code == problem.Unavailable {
		return problem.New(code, "request canceled")
	}
	return problem.New(problem.Internal, "internal error")
}

// writeProblem writes pe with the status its code maps to.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, pe *problem.Error) {
	switch pe.Code {
	case problem.Unauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="eddy"`)
	case problem.Unavailable:
		w.Header().Set("Retry-After", strconv.Itoa(changelog.RetryAfter))
	}
	s.writeJSON(w, r, problem.Status(pe.Code), problemBody{Error: pe})
}

// writeMethodNotAllowed answers 405 as a problem object; the mux has
// already set the Allow header.
func (s *Server) writeMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	pe := &problem.Error{Code: codeMethodNotAllowed, Message: "method " + r.Method + " is not allowed on " + r.URL.Path}
	if allow := w.Header().Get("Allow"); allow != "" {
		pe = pe.With("allow", allow)
	}
	s.writeJSON(w, r, http.StatusMethodNotAllowed, problemBody{Error: pe})
}

// notFoundRoute is the answer for a path no route serves.
func notFoundRoute(r *http.Request) *problem.Error {
	return problem.New(problem.NotFound, "no route for %s", r.URL.Path)
}

// writeJSON writes v as a JSON response with status.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.logger.ErrorContext(r.Context(), "encode response", "request_id", requestID(r.Context()), "err", err)
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	s.writeEncoded(w, status, b)
}

// writeEncoded writes b, a JSON document as json.Marshal renders it, and
// a newline: writeJSON's response for a value encoded by other means. The
// whole body is at hand, so it goes out with its Content-Length rather
// than chunked: a client reading a page of the log knows its size.
func (s *Server) writeEncoded(w http.ResponseWriter, status int, b []byte) {
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// forbidden returns a forbidden problem.
func forbidden(format string, args ...any) *problem.Error {
	return problem.New(problem.Forbidden, format, args...)
}

// badRequest returns a bad_request problem.
func badRequest(format string, args ...any) *problem.Error {
	return problem.New(problem.BadRequest, format, args...)
}
