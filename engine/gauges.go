package engine

import (
	"context"
	"time"

	"github.com/eddy-run/eddy/store"
)

// Gauge is one owned trigger's gauges at a scrape.
type Gauge struct {
	Space   string
	Trigger string
	// Lag is head - cursor (rows not yet judged); 0 for cron triggers.
	Lag int64
	// OldestOpen is the age of the oldest open delivery (0 if none).
	OldestOpen time.Duration
	// Open and Parked count the trigger's open and parked deliveries.
	Open   int
	Parked int
}

// Gauges reports the triggers whose lease this process holds (each
// process reports its own, so a sum over processes counts each trigger
// once).
func (e *Engine) Gauges(ctx context.Context) []Gauge {
	type owned struct {
		space, name string
		cursor      int64
		change      bool
	}
	var list []owned
	e.mu.Lock()
	for _, sr := range e.spaces {
		sr.mu.Lock()
		for name, t := range sr.trigs {
			list = append(list, owned{space: sr.id, name: name, cursor: t.state.Cursor, change: t.def.Source.Changes != nil})
		}
		sr.mu.Unlock()
	}
	e.mu.Unlock()
	heads := map[string]int64{}
	out := make([]Gauge, 0, len(list))
	now := e.now()
	for _, o := range list {
		head, ok := heads[o.space]
		if !ok {
			sp, err := e.log.Space(ctx, o.space)
			if err != nil {
				continue
			}
			head, heads[o.space] = sp.Head, sp.Head
		}
		g := Gauge{Space: o.space, Trigger: o.name}
		if o.change {
			g.Lag = max(head-o.cursor, 0)
		}
		if stats, err := e.st.DeliveryBacklog(ctx, o.space, o.name); err == nil {
			for _, s := range store.OpenDeliveryStatuses {
				g.Open += stats.ByStatus[s]
			}
			g.Parked = stats.ByStatus[store.DeliveryParked]
			if !stats.OldestOpen.IsZero() {
				g.OldestOpen = max(now.Sub(stats.OldestOpen), 0)
			}
		}
		out = append(out, g)
	}
	return out
}
