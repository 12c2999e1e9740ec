package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestServerSpans(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := newEnvConfig(t, Config{TracerProvider: tp})

	parent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	e.do(t, req{Method: "PUT", Path: "/api/v1/spaces/default/entities/task/t1", Token: e.admin,
		Body: map[string]any{"n": 1}, Header: map[string]string{"Traceparent": parent}}).want(201)
	e.do(t, req{Method: "GET", Path: "/api/v1/spaces/default/entities/task/nope", Token: e.admin}).problem("not_found")

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("ended spans = %d, want 2", len(spans))
	}
	put, get := spans[0], spans[1]
	if put.Name() != "PUT /api/v1/spaces/{space}/entities/{type}/{id}" {
		t.Errorf("span name = %q", put.Name())
	}
	if put.SpanKind() != trace.SpanKindServer {
		t.Errorf("span kind = %v", put.SpanKind())
	}
	if got := put.Parent().TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("parent trace = %s: the incoming traceparent was not continued", got)
	}
	if !put.Parent().IsRemote() {
		t.Errorf("parent is not remote")
	}
	attrs := attribute.NewSet(put.Attributes()...)
	getAttrs := attribute.NewSet(get.Attributes()...)
	for k, want := range map[attribute.Key]attribute.Value{
		"http.request.method":       attribute.StringValue("PUT"),
		"http.route":                attribute.StringValue("/api/v1/spaces/{space}/entities/{type}/{id}"),
		"http.response.status_code": attribute.IntValue(201),
	} {
		if got, ok := attrs.Value(k); !ok || got != want {
			t.Errorf("%s = %v, want %v", k, got.String(), want.String())
		}
	}
	// The write's provenance names the server span, so the deliveries it
	// causes link to it.
	var commit struct {
		Provenance struct {
			Traceparent string `json:"traceparent"`
		} `json:"provenance"`
	}
	e.call(t, "GET", "/api/v1/spaces/default/changes/1", nil).want(200).decode(&commit)
	want := "00-" + put.SpanContext().TraceID().String() + "-" + put.SpanContext().SpanID().String() + "-01"
	if commit.Provenance.Traceparent != want {
		t.Errorf("provenance traceparent = %q, want %s (the server span)", commit.Provenance.Traceparent, want)
	}
	if get.Parent().IsValid() {
		t.Errorf("a request without traceparent has parent %v", get.Parent())
	}
	if got, _ := getAttrs.Value("http.response.status_code"); got.AsInt64() != 404 {
		t.Errorf("status attribute = %v, want 404", got.String())
	}
}

func TestAccessLogTraceID(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	s := newServer(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil)), TracerProvider: tp})
	r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	r.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	s.Handler().ServeHTTP(httptest.NewRecorder(), r)
	if !strings.Contains(logs.String(), "trace_id=4bf92f3577b34da6a3ce929d0e0e4736") {
		t.Fatalf("access log has no trace_id of the request's trace: %s", logs.String())
	}
	// Without a tracer provider that records, and no incoming trace,
	// there is no trace id to log.
	logs.Reset()
	s = newServer(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	s.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if strings.Contains(logs.String(), "trace_id") {
		t.Fatalf("trace_id logged without a trace: %s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}
