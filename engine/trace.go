package engine

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/eddy-run/eddy/store"
)

// tracerName is the instrumentation scope of the engine's spans.
const tracerName = "github.com/eddy-run/eddy/engine"

// traceContext reads and writes W3C traceparent headers.
var traceContext = propagation.TraceContext{}

// tracer returns the engine's tracer from the global provider (a no-op
// until the embedding program installs one).
func tracer() trace.Tracer { return otel.Tracer(tracerName) }

// causeLink links a delivery's span to the span of the commit that
// caused it, when that commit recorded a traceparent.
func causeLink(c *store.Commit) []trace.SpanStartOption {
	if c == nil || c.Provenance.Traceparent == "" {
		return nil
	}
	ctx := traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": c.Provenance.Traceparent})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	return []trace.SpanStartOption{trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
		attribute.Int64("eddy.cause.seq", c.Seq),
	}})}
}

// traceparent returns the W3C traceparent of the span in ctx ("" when
// there is no valid span), recorded on the rows a delivery writes so the
// next delivery links to it.
func traceparent(ctx context.Context) string {
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	return carrier["traceparent"]
}
