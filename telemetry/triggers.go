package telemetry

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/eddy-run/eddy/engine"
)

// triggerInstruments are the trigger engine's counters.
type triggerInstruments struct {
	deliveries metric.Int64Counter
	evaluated  metric.Int64Counter
	batch      metric.Float64Histogram
}

// defineTriggerCounters defines the engine's counters.
func (t *Telemetry) defineTriggerCounters(m metric.Meter) error {
	var errs [3]error
	t.trig.deliveries, errs[0] = m.Int64Counter("eddy_trigger_deliveries_total", metric.WithUnit("{attempt}"),
		metric.WithDescription("Delivery attempts that ended, by space, trigger and outcome (succeeded, retrying, failed, error)."))
	t.trig.evaluated, errs[1] = m.Int64Counter("eddy_trigger_rows_evaluated_total", metric.WithUnit("{row}"),
		metric.WithDescription("Rows judged by the evaluator, by space and trigger."))
	t.trig.batch, errs[2] = m.Float64Histogram("eddy_trigger_evaluation_duration_seconds", metric.WithUnit("s"),
		metric.WithDescription("Latency of evaluation batches (read, judge, advance), by space."),
		metric.WithExplicitBucketBoundaries(commitBuckets...))
	return errors.Join(errs[:]...)
}

// ObserveEngine records what the trigger engine did; it is an
// engine.Options.Observe hook.
func (t *Telemetry) ObserveEngine(ev engine.Event) {
	ctx := context.Background()
	switch ev.Kind {
	case "delivery":
		t.trig.deliveries.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(
			attribute.String("space", ev.Space), attribute.String("trigger", ev.Trigger), attribute.String("outcome", ev.Outcome))))
	case "evaluated":
		attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("space", ev.Space), attribute.String("trigger", ev.Trigger)))
		t.trig.evaluated.Add(ctx, int64(ev.Rows), attrs)
		t.trig.batch.Record(ctx, ev.Duration.Seconds(), metric.WithAttributeSet(attribute.NewSet(attribute.String("space", ev.Space))))
	}
}

// WatchTriggers registers the per-trigger gauges, read from gauges at
// scrape time: eddy_trigger_lag (head - cursor), eddy_trigger_oldest_open_
// delivery_age_seconds, eddy_trigger_open_deliveries and
// eddy_trigger_parked_deliveries.
func (t *Telemetry) WatchTriggers(gauges func(context.Context) []engine.Gauge) {
	m := t.provider.Meter(scope)
	lag, err1 := m.Int64ObservableGauge("eddy_trigger_lag", metric.WithUnit("{row}"),
		metric.WithDescription("Rows above a trigger's cursor (head - cursor), for triggers this process holds."))
	age, err2 := m.Float64ObservableGauge("eddy_trigger_oldest_open_delivery_age_seconds", metric.WithUnit("s"),
		metric.WithDescription("Age of a trigger's oldest open (pending, running or retrying) delivery; 0 when none."))
	open, err3 := m.Int64ObservableGauge("eddy_trigger_open_deliveries", metric.WithUnit("{delivery}"),
		metric.WithDescription("A trigger's open deliveries."))
	parked, err4 := m.Int64ObservableGauge("eddy_trigger_parked_deliveries", metric.WithUnit("{delivery}"),
		metric.WithDescription("A trigger's deliveries parked at the causality cap."))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		panic(fmt.Sprintf("telemetry: define trigger gauges: %v", err)) // static definitions
	}
	_, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		for _, g := range gauges(ctx) {
			attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("space", g.Space), attribute.String("trigger", g.Trigger)))
			o.ObserveInt64(lag, g.Lag, attrs)
			o.ObserveFloat64(age, g.OldestOpen.Seconds(), attrs)
			o.ObserveInt64(open, int64(g.Open), attrs)
			o.ObserveInt64(parked, int64(g.Parked), attrs)
		}
		return nil
	}, lag, age, open, parked)
	if err != nil {
		panic(fmt.Sprintf("telemetry: register trigger gauges: %v", err))
	}
}
