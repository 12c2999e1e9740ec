package engine_test

import (
	"context"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
)

// TestGauges: the scrape-time gauges of the owned triggers count open and
// parked deliveries as the trigger status does (finished ones not at
// all), age the oldest open one, and follow the deliveries as they
// finish.
func TestGauges(t *testing.T) {
	bothDrivers(t, func(t *testing.T, open opener) {
		e := newEnv(t, open(t), engine.Options{})
		release := make(chan struct{})
		e.handler("hold", func(ctx context.Context, in functions.Input) ([]changelog.Mutation, error) {
			if in.Entity.ID == "held" {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return nil, nil
		})
		e.function("to-b", `{"kind":"expr","writes":["b"],"code":"put(\"b\", entity.id, {})"}`)
		e.function("to-c", `{"kind":"expr","writes":["c"],"code":"put(\"c\", entity.id, {})"}`)
		e.trigger("jobs", `{"source":{"changes":{"types":["job"]}},"function":"hold"}`)
		e.trigger("first", `{"source":{"changes":{"types":["a"]}},"function":"to-b"}`)
		e.trigger("loop", `{"source":{"changes":{"types":["b"]}},"function":"to-c","causalityCap":1}`)
		e.write(put("job", "quick", map[string]any{}))
		e.settle("jobs")
		e.write(put("job", "held", map[string]any{}))
		e.write(put("b", "y", map[string]any{}))
		e.write(put("a", "x", map[string]any{}))
		e.settle("first", "loop")
		e.eventually("the held delivery open", func() bool {
			return len(e.deliveries("jobs", store.OpenDeliveryStatuses...)) == 1
		})

		gauges := func() map[string]engine.Gauge {
			out := map[string]engine.Gauge{}
			for _, g := range e.eng.Gauges(t.Context()) {
				out[g.Trigger] = g
			}
			return out
		}
		g := gauges()
		if jobs := g["jobs"]; jobs.Space != space || jobs.Open != 1 || jobs.Parked != 0 || jobs.Lag != 0 || jobs.OldestOpen <= 0 {
			t.Fatalf("jobs gauge %+v, want one open delivery (aged), none parked, no lag", jobs)
		}
		if loop := g["loop"]; loop.Open != 0 || loop.Parked != 1 || loop.OldestOpen != 0 {
			t.Fatalf("loop gauge %+v, want one parked delivery and none open", loop)
		}
		for name, want := range map[string]engine.Gauge{"jobs": g["jobs"], "loop": g["loop"]} {
			st := e.status(name)
			open := st.Deliveries[store.DeliveryPending] + st.Deliveries[store.DeliveryRunning] + st.Deliveries[store.DeliveryRetrying]
			if open != want.Open || st.Deliveries[store.DeliveryParked] != want.Parked || st.Deliveries[store.DeliverySucceeded] != 1 {
				t.Fatalf("%s: status counts %v, gauge %+v; want the same open and parked counts and one succeeded", name, st.Deliveries, want)
			}
		}

		close(release)
		e.eventually("the held delivery done", func() bool {
			jobs := gauges()["jobs"]
			return jobs.Open == 0 && jobs.OldestOpen == 0
		})
	})
}
