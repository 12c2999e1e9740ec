package telemetry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an in-process OTLP/HTTP trace receiver: it decodes
// every export request and hands its spans to the test.
type otlpReceiver struct {
	srv   *httptest.Server
	spans chan *tracepb.ResourceSpans
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	rcv := &otlpReceiver{spans: make(chan *tracepb.ResourceSpans, 64)}
	rcv.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/traces protobuf", http.StatusBadRequest)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.GetResourceSpans() {
			rcv.spans <- rs
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	t.Cleanup(rcv.srv.Close)
	return rcv
}

// env returns a getenv over vars.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestStartTracingExportsOverOTLP(t *testing.T) {
	rcv := newOTLPReceiver(t)
	// The exporter reads the OTEL_EXPORTER_OTLP_* variables from the
	// process environment, as it does in eddy serve.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "eddy-test")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci")
	defer otel.SetTracerProvider(otel.GetTracerProvider())

	ctx := context.Background()
	tr, err := StartTracing(ctx, env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.srv.URL}), "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Exporting {
		t.Fatal("not exporting with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	_, span := otel.Tracer("test").Start(ctx, "a span")
	span.End()
	// Shutdown flushes the batch to the receiver.
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var rs *tracepb.ResourceSpans
	select {
	case rs = <-rcv.spans:
	default:
		t.Fatal("the receiver got no spans after Shutdown flushed")
	}
	res := map[string]string{}
	for _, kv := range rs.GetResource().GetAttributes() {
		res[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	for k, want := range map[string]string{"service.name": "eddy-test", "service.version": "v1.2.3", "deployment.environment": "ci"} {
		if res[k] != want {
			t.Errorf("resource %s = %q, want %q (all: %v)", k, res[k], want, res)
		}
	}
	var names []string
	for _, ss := range rs.GetScopeSpans() {
		for _, s := range ss.GetSpans() {
			names = append(names, s.GetName())
		}
	}
	if len(names) != 1 || names[0] != "a span" {
		t.Fatalf("spans = %v, want [a span]", names)
	}
}

func TestWantsExport(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
		err  bool
	}{
		{"nothing set", nil, false, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true, false},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true, false},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, false},
		{"exporter none wins", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, false},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, false},
		{"http/protobuf", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_TRACES_EXPORTER": "otlp"}, true, false},
		{"grpc refused", map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_TRACES_EXPORTER": "otlp"}, false, true},
		{"traces grpc refused", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, true},
		{"zipkin refused", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wantsExport(env(tc.env))
			if got != tc.want || (err != nil) != tc.err {
				t.Fatalf("wantsExport = %v, %v; want %v, error %v", got, err, tc.want, tc.err)
			}
			if err != nil && !errors.Is(err, ErrTraceExporter) {
				t.Fatalf("error %v is not ErrTraceExporter", err)
			}
		})
	}
}
