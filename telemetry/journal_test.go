package telemetry_test

import (
	"context"
	"testing"
	"time"

	"github.com/eddy-run/eddy/journal"
	"github.com/eddy-run/eddy/telemetry"
)

// TestJournalMetrics: pages, records, warnings by reason, sessions and
// the settled lag reach /metrics; warnings exist at zero from the start.
func TestJournalMetrics(t *testing.T) {
	tel, err := telemetry.New(telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	tel.ObserveJournal(journal.Event{Kind: "page", Space: "s", Records: 9}) // before WatchJournal: nothing
	tel.WatchJournal()
	if got := scrape(t, tel.Handler())[`eddy_journal_warnings_total{reason="RECORD_UNREADABLE"}`]; got != "0" {
		t.Fatalf("fresh warnings = %q", got)
	}
	tel.ObserveJournal(journal.Event{Kind: "session", Space: "s"})
	tel.ObserveJournal(journal.Event{Kind: "page", Space: "s", Records: 3, Lag: 2100 * time.Millisecond,
		Warnings: map[string]int{journal.RecordUnreadable: 2}})
	tel.ObserveJournal(journal.Event{Kind: "page", Space: "s", Records: 1, Lag: 2050 * time.Millisecond})
	got := scrape(t, tel.Handler())
	for series, want := range map[string]string{
		`eddy_journal_pages_total{space="s"}`:                      "2",
		`eddy_journal_records_total{space="s"}`:                    "4",
		`eddy_journal_sessions_total{space="s"}`:                   "1",
		`eddy_journal_warnings_total{reason="RECORD_UNREADABLE"}`:  "2",
		`eddy_journal_warnings_total{reason="OBJECT_UNAVAILABLE"}`: "0",
		`eddy_journal_settled_lag_seconds_count`:                   "2",
		`eddy_journal_settled_lag_seconds_bucket{le="2.1"}`:        "2",
		`eddy_journal_settled_lag_seconds_bucket{le="2"}`:          "0",
	} {
		if got[series] != want {
			t.Errorf("%s = %q, want %s", series, got[series], want)
		}
	}
}
