package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/eddy-run/eddy/changelog"
)

// scope is the instrumentation scope of eddy's meters.
const scope = "github.com/eddy-run/eddy"

// Bucket boundaries, in seconds.
var (
	commitBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	httpBuckets   = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// Options configure New.
type Options struct {
	// Watchers returns the number of open watch streams (for example
	// watch.Hub.Watchers). It is called at scrape time; nil reports no
	// eddy_watchers gauge.
	Watchers func() int
}

// Telemetry is the process's metrics: a MeterProvider, its Prometheus
// registry, and eddy's instruments. Its methods are safe for concurrent
// use.
type Telemetry struct {
	reg      *prometheus.Registry
	provider *sdkmetric.MeterProvider
	handler  http.Handler

	commitDuration metric.Float64Histogram
	commitGroups   metric.Int64Counter
	commits        metric.Int64Counter
	rejections     metric.Int64Counter
	httpRequests   metric.Int64Counter
	httpDuration   metric.Float64Histogram
	trig           triggerInstruments

	viewsMu sync.RWMutex
	views   *viewInstruments // guarded by viewsMu; set by WatchViews

	journal atomic.Pointer[journalInstruments] // set by WatchJournal

	committed, failed metric.MeasurementOption
}

// New builds a MeterProvider exporting to a new Prometheus registry and
// defines eddy's instruments. Shutdown releases it.
func New(opts Options) (*Telemetry, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("register go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("register process collector: %w", err)
	}
	exp, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithoutSuffixes),
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	t := &Telemetry{
		reg:       reg,
		provider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)),
		handler:   promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		committed: metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", "committed"))),
		failed:    metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", "failed"))),
	}
	if err := t.instruments(opts); err != nil {
		return nil, err
	}
	return t, nil
}

// instruments defines eddy's instruments and starts the counters at zero
// so their series exist from the first scrape.
func (t *Telemetry) instruments(opts Options) error {
	m := t.provider.Meter(scope)
	errs := make([]error, 0, 7)
	keep := func(err error) { errs = append(errs, err) }
	var err error
	t.commitDuration, err = m.Float64Histogram("eddy_commit_duration_seconds", metric.WithUnit("s"),
		metric.WithDescription("Latency of committed group transactions, from WriteBegin to Commit returning."),
		metric.WithExplicitBucketBoundaries(commitBuckets...))
	keep(err)
	t.commitGroups, err = m.Int64Counter("eddy_commit_groups_total", metric.WithUnit("{transaction}"),
		metric.WithDescription("Group write transactions, by outcome (committed or failed)."))
	keep(err)
	t.commits, err = m.Int64Counter("eddy_commits_total", metric.WithUnit("{commit}"),
		metric.WithDescription("Commits appended to the changelog."))
	keep(err)
	t.rejections, err = m.Int64Counter("eddy_write_rejections_total", metric.WithUnit("{receipt}"),
		metric.WithDescription("Mutations answered with a rejected receipt."))
	keep(err)
	t.httpRequests, err = m.Int64Counter("eddy_http_requests_total", metric.WithUnit("{request}"),
		metric.WithDescription("HTTP requests served, by method, route pattern and status."))
	keep(err)
	t.httpDuration, err = m.Float64Histogram("eddy_http_request_duration_seconds", metric.WithUnit("s"),
		metric.WithDescription("HTTP request latency, by method and route pattern (a watch stream counts until its handler returns)."),
		metric.WithExplicitBucketBoundaries(httpBuckets...))
	keep(err)
	keep(t.defineTriggerCounters(m))
	if opts.Watchers != nil {
		watchers := opts.Watchers
		_, err = m.Int64ObservableGauge("eddy_watchers", metric.WithUnit("{stream}"),
			metric.WithDescription("Open watch streams."),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				o.Observe(int64(watchers()))
				return nil
			}))
		keep(err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("define instruments: %w", err)
	}
	ctx := context.Background()
	t.commitGroups.Add(ctx, 0, t.committed)
	t.commitGroups.Add(ctx, 0, t.failed)
	t.commits.Add(ctx, 0)
	t.rejections.Add(ctx, 0)
	return nil
}

// Handler serves the metrics in the Prometheus text format (GET /metrics).
func (t *Telemetry) Handler() http.Handler { return t.handler }

// Registry returns the Prometheus registry the metrics are exported to.
func (t *Telemetry) Registry() *prometheus.Registry { return t.reg }

// MeterProvider returns the provider, for packages that define
// instruments of their own.
func (t *Telemetry) MeterProvider() metric.MeterProvider { return t.provider }

// Shutdown flushes and stops the MeterProvider.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("shut down meter provider: %w", err)
	}
	return nil
}

// ObserveGroup records one group transaction; it is a
// changelog.Options.Observe hook.
func (t *Telemetry) ObserveGroup(s changelog.GroupStats) {
	ctx := context.Background()
	if s.Err != nil {
		t.commitGroups.Add(ctx, 1, t.failed)
		return
	}
	t.commitGroups.Add(ctx, 1, t.committed)
	t.commitDuration.Record(ctx, s.Duration.Seconds())
	t.commits.Add(ctx, int64(s.Commits))
	t.rejections.Add(ctx, int64(s.Rejections))
}

// ObserveHTTP records one served HTTP request. Route is the ServeMux
// pattern that served it without its method ("" for none: recorded as
// "unmatched"); methods outside the standard set are recorded as "OTHER".
func (t *Telemetry) ObserveHTTP(method, route string, status int, elapsed time.Duration) {
	method = normalMethod(method)
	if route == "" {
		route = "unmatched"
	}
	ctx := context.Background()
	t.httpRequests.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(
		attribute.String("method", method), attribute.String("route", route), attribute.Int("status", status))))
	t.httpDuration.Record(ctx, elapsed.Seconds(), metric.WithAttributeSet(attribute.NewSet(
		attribute.String("method", method), attribute.String("route", route))))
}

// normalMethod bounds the method label to the standard methods.
func normalMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}
