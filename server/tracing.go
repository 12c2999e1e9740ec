package server

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the server's spans.
const tracerName = "github.com/eddy-run/eddy/server"

// serverSpan is the start option of every request's span. Attributes are
// set only on a recording span: without an exporter (or when the trace is
// not sampled) a request builds none.
var serverSpan = trace.WithSpanKind(trace.SpanKindServer)

// withTracing starts one server span per request, continuing the trace
// of an incoming traceparent header. It runs inside withAccessLog, whose
// recorder tells it the status and the pattern that served the request:
// the span is named "METHOD pattern" (never the raw path, which carries
// ids). Handlers see the span in their request context, so the commits
// they make record its traceparent, and the access log line names its
// trace_id.
func (s *Server) withTracing(next http.Handler) http.Handler {
	tracer := s.tracerProvider.Tracer(tracerName)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, r.Method, serverSpan)
		defer span.End()
		rec, ok := w.(*statusRecorder)
		if ok && span.SpanContext().IsValid() {
			rec.traceID = span.SpanContext().TraceID().String()
		}
		if span.IsRecording() {
			span.SetAttributes(
				attribute.String("http.request.method", r.Method),
				attribute.String("url.path", r.URL.Path),
				attribute.String("http.request_id", requestID(r.Context())),
			)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
		if !ok || !span.IsRecording() {
			return
		}
		status := rec.status()
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if route := s.route(r, rec); route != "" {
			span.SetName(r.Method + " " + route)
			span.SetAttributes(attribute.String("http.route", route))
		}
		if rec.tokenID != "" {
			span.SetAttributes(attribute.String("eddy.token", rec.tokenID))
		}
		if status >= 500 {
			span.SetStatus(codes.Error, strings.ToLower(http.StatusText(status)))
		}
	})
}

// traceparent is the W3C traceparent a write records in its provenance:
// the request's server span when it is recording (so the deliveries the
// write causes link to it), else the client's Traceparent header as sent.
func traceparent(r *http.Request) string {
	sc := trace.SpanContextFromContext(r.Context())
	if !sc.IsValid() || !sc.IsSampled() {
		return r.Header.Get("Traceparent")
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(r.Context(), carrier)
	return carrier["traceparent"]
}
