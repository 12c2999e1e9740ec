package telemetry

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/eddy-run/eddy/views"
)

// viewInstruments are view sync's instruments; nil until WatchViews.
type viewInstruments struct {
	projected metric.Int64Counter
	resets    metric.Int64Counter
	streams   metric.Int64UpDownCounter
}

// WatchViews defines view sync's metrics: eddy_view_changes_projected_total
// (by space and view), eddy_view_resets_total (by space and reason),
// eddy_view_streams (live view streams of this process) and
// eddy_view_bootstrap_sessions (frozen bootstrap sessions not yet
// expired, of every process sharing the database, read from sessions at
// scrape time). ObserveViews records into them.
func (t *Telemetry) WatchViews(sessions func(context.Context) (int64, error)) {
	m := t.provider.Meter(scope)
	var vi viewInstruments
	var errs [4]error
	vi.projected, errs[0] = m.Int64Counter("eddy_view_changes_projected_total", metric.WithUnit("{change}"),
		metric.WithDescription("View changes and bootstrap records sent to clients, by space and view."))
	vi.resets, errs[1] = m.Int64Counter("eddy_view_resets_total", metric.WithUnit("{reset}"),
		metric.WithDescription("reset_required answers and terminal frames, by space and reason."))
	vi.streams, errs[2] = m.Int64UpDownCounter("eddy_view_streams", metric.WithUnit("{stream}"),
		metric.WithDescription("Open live view streams in this process."))
	_, errs[3] = m.Int64ObservableGauge("eddy_view_bootstrap_sessions", metric.WithUnit("{session}"),
		metric.WithDescription("Frozen view bootstrap sessions within their retry window."),
		metric.WithInt64Callback(func(ctx context.Context, o metric.Int64Observer) error {
			n, err := sessions(ctx)
			if err != nil {
				return fmt.Errorf("count bootstrap sessions: %w", err)
			}
			o.Observe(n)
			return nil
		}))
	if err := errors.Join(errs[:]...); err != nil {
		panic(fmt.Sprintf("telemetry: define view instruments: %v", err)) // static definitions
	}
	vi.streams.Add(context.Background(), 0)
	t.viewsMu.Lock()
	t.views = &vi
	t.viewsMu.Unlock()
}

// ObserveViews records what view sync did; it is a views.Options.Observe
// hook. Before WatchViews it records nothing.
func (t *Telemetry) ObserveViews(ev views.Event) {
	t.viewsMu.RLock()
	vi := t.views
	t.viewsMu.RUnlock()
	if vi == nil {
		return
	}
	ctx := context.Background()
	switch ev.Kind {
	case "projected":
		if ev.Changes > 0 {
			vi.projected.Add(ctx, int64(ev.Changes), metric.WithAttributeSet(attribute.NewSet(
				attribute.String("space", ev.Space), attribute.String("view", ev.View))))
		}
	case "reset":
		vi.resets.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(
			attribute.String("space", ev.Space), attribute.String("reason", string(ev.Reason)))))
	case "stream_open":
		vi.streams.Add(ctx, 1)
	case "stream_close":
		vi.streams.Add(ctx, -1)
	}
}
