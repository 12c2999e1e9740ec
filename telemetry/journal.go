package telemetry

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/eddy-run/eddy/journal"
)

// lagBuckets bound the settled lag histogram (seconds): a journal's lag
// sits at its safe window (default 2 s) plus how often clients poll.
var lagBuckets = []float64{0.5, 1, 2, 2.1, 2.25, 2.5, 3, 5, 10, 30, 60, 300, 3600}

// journalInstruments are the journal's instruments; nil until
// WatchJournal.
type journalInstruments struct {
	pages, records, warnings, sessions metric.Int64Counter
	lag                                metric.Float64Histogram
}

// WatchJournal defines the journal's metrics: eddy_journal_pages_total and
// eddy_journal_records_total (by space), eddy_journal_warnings_total (by
// reason), eddy_journal_sessions_total (by space) and
// eddy_journal_settled_lag_seconds (per page that walked commits: how long
// ago the newest of them was committed). ObserveJournal records into them.
func (t *Telemetry) WatchJournal() {
	m := t.provider.Meter(scope)
	var ji journalInstruments
	var errs [5]error
	ji.pages, errs[0] = m.Int64Counter("eddy_journal_pages_total", metric.WithUnit("{page}"),
		metric.WithDescription("Journal pages served, by space."))
	ji.records, errs[1] = m.Int64Counter("eddy_journal_records_total", metric.WithUnit("{record}"),
		metric.WithDescription("Journal records (object, tombstone, access) served in pages, by space."))
	ji.warnings, errs[2] = m.Int64Counter("eddy_journal_warnings_total", metric.WithUnit("{warning}"),
		metric.WithDescription("Journal page warnings, by reason (OBJECT_UNAVAILABLE, RECORD_UNREADABLE)."))
	ji.sessions, errs[3] = m.Int64Counter("eddy_journal_sessions_total", metric.WithUnit("{session}"),
		metric.WithDescription("Journal sessions created, by space."))
	ji.lag, errs[4] = m.Float64Histogram("eddy_journal_settled_lag_seconds", metric.WithUnit("s"),
		metric.WithDescription("Per journal page that walked commits, the age of the newest one: commit to the first page that includes it."),
		metric.WithExplicitBucketBoundaries(lagBuckets...))
	if err := errors.Join(errs[:]...); err != nil {
		panic(fmt.Sprintf("telemetry: define journal instruments: %v", err)) // static definitions
	}
	ctx := context.Background()
	for _, reason := range []string{journal.ObjectUnavailable, journal.RecordUnreadable} {
		ji.warnings.Add(ctx, 0, metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason))))
	}
	t.journal.Store(&ji)
}

// ObserveJournal records what the journal served; it is a
// journal.Options.Observe hook. Before WatchJournal it records nothing.
func (t *Telemetry) ObserveJournal(ev journal.Event) {
	ji := t.journal.Load()
	if ji == nil {
		return
	}
	ctx := context.Background()
	space := metric.WithAttributeSet(attribute.NewSet(attribute.String("space", ev.Space)))
	switch ev.Kind {
	case "session":
		ji.sessions.Add(ctx, 1, space)
	case "page":
		ji.pages.Add(ctx, 1, space)
		ji.records.Add(ctx, int64(ev.Records), space)
		for reason, n := range ev.Warnings {
			ji.warnings.Add(ctx, int64(n), metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason))))
		}
		if ev.Lag > 0 {
			ji.lag.Record(ctx, ev.Lag.Seconds())
		}
	}
}
