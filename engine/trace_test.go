package engine_test

import (
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// A delivery's span links to the span of the commit that caused it, and
// the rows it writes carry its own traceparent, so a chain is a trace.
func TestDeliverySpanLinksToCause(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	e := newEnv(t, openSQLite(t), testOptions())
	e.function("stamp", `{"kind":"expr","writes":["task"],"code":"patch(\"task\", entity.id, {\"seen\": true})"}`)
	e.trigger("stamp", `{"source":{"changes":{"types":["task"],"ops":["put"]}},"function":"stamp"}`)
	const causeTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	res, err := e.log.Write(t.Context(), changelog.WriteRequest{Space: space,
		Mutations:  []changelog.Mutation{put("task", "t1", map[string]any{"title": "x"})},
		Provenance: store.Provenance{Actor: "owner", Via: "api", Traceparent: causeTP}})
	if err != nil {
		t.Fatal(err)
	}
	e.settle()
	// The attempt's span ends just after the completion the fence saw.
	var delivery *tracetest.SpanStub
	e.eventually("the eddy.delivery span ended", func() bool {
		for _, s := range exp.GetSpans() {
			if s.Name == "eddy.delivery" {
				delivery = &s
			}
		}
		return delivery != nil
	})
	if len(delivery.Links) != 1 || delivery.Links[0].SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("delivery span links %+v, want the causing commit's span", delivery.Links)
	}
	stamp := e.commits(res.LastSeq)[0]
	want := delivery.SpanContext.TraceID().String()
	if tp := stamp.Provenance.Traceparent; len(tp) < 35 || tp[3:35] != want {
		t.Fatalf("the delivery's row carries traceparent %q, want trace %s", tp, want)
	}
}
