package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// ErrTraceExporter is returned by StartTracing for an exporter or
// protocol eddy does not ship (a wrong OTEL_TRACES_EXPORTER or
// OTEL_EXPORTER_OTLP_PROTOCOL).
var ErrTraceExporter = errors.New("unsupported trace exporter")

// Tracing is the process's trace pipeline as the OpenTelemetry
// environment chose it.
type Tracing struct {
	// Exporting reports whether spans leave the process (OTLP).
	Exporting bool
	provider  *sdktrace.TracerProvider
}

// StartTracing reads the standard OpenTelemetry environment through getenv
// and, when it asks for trace export, installs a global TracerProvider
// that batches spans to an OTLP/HTTP (protobuf) collector. The W3C trace
// context propagator is installed either way.
//
// Traces are exported when OTEL_TRACES_EXPORTER is "otlp", or when it is
// unset and OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// is set; "none", or OTEL_SDK_DISABLED=true, turns export off. The exporter
// itself reads the other OTEL_EXPORTER_OTLP_* variables (headers, timeout,
// compression, insecure), the SDK reads OTEL_TRACES_SAMPLER* and OTEL_BSP_*,
// and the resource reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
// Only the http/protobuf protocol is built in.
func StartTracing(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	export, err := wantsExport(getenv)
	if err != nil || !export {
		return &Tracing{}, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("otlp trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName("eddy"), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the defaults.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return &Tracing{Exporting: true, provider: tp}, nil
}

// wantsExport decides from the environment whether traces are exported.
func wantsExport(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	if p := protocol(getenv); p != "" && p != "http/protobuf" {
		return false, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_PROTOCOL %q (eddy sends http/protobuf)", ErrTraceExporter, p)
	}
	switch exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exporter {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("%w: OTEL_TRACES_EXPORTER %q (eddy supports otlp and none)", ErrTraceExporter, exporter)
	}
}

// protocol is the OTLP protocol the environment asks for traces.
func protocol(getenv func(string) string) string {
	if p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")); p != "" {
		return p
	}
	return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
}

// Shutdown flushes the spans still batched and stops the exporter; it is
// a no-op when nothing is exported.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.provider == nil {
		return nil
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("shut down tracing: %w", err)
	}
	return nil
}
