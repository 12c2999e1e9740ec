package main

import (
	"context"
	"fmt"
	"io"

	"github.com/eddy-run/eddy/client"
)

// export pages the history backward from the head with cfg's filters,
// writes the rows whose ts lies in [since, until] and returns how many.
// The walk stops at the first row older than since: timestamps follow
// seq order (a clock stepping back on the server can break that; widen
// --since by the step if it did). Filtered pages may be short or empty
// while their cursor moves; only an exhausted walk is the end.
func export(ctx context.Context, sp *client.Space, cfg config, w rowWriter, stderr io.Writer) (int, error) {
	info, err := sp.Info(ctx)
	if err != nil {
		return 0, err
	}
	bar, err := newProgress(cfg.progress, stderr, info.Head, info.Horizon)
	if err != nil {
		return 0, err
	}
	n := 0
	p := client.HistoryParams{Limit: cfg.page, Filter: cfg.filter}
	for page, err := range sp.HistoryPages(ctx, p) {
		if err != nil {
			return n, fmt.Errorf("history: %w", err)
		}
		for i := range page.Changes {
			r := &page.Changes[i]
			if !cfg.until.IsZero() && r.TS.After(cfg.until) {
				continue
			}
			if !cfg.since.IsZero() && r.TS.Before(cfg.since) {
				bar.done(r.Seq, n)
				return n, nil
			}
			if err := w.Write(r); err != nil {
				return n, fmt.Errorf("write: %w", err)
			}
			n++
		}
		if page.Cursor != nil {
			bar.update(*page.Cursor, n)
		}
	}
	bar.done(info.Horizon, n)
	return n, nil
}
