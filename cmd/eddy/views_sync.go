package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/views"
)

// printChanges prints a page's changes, one line each.
func (a *app) printChanges(commits []views.Commit) {
	writeChanges(a.stdout, commits)
}

// writeChanges writes a line per change of commits.
func writeChanges(w io.Writer, commits []views.Commit) {
	for _, c := range commits {
		for _, ch := range c.Changes {
			line := fmt.Sprintf("%d\t%s\t%s/%s@%d", c.Seq, ch.Kind, ch.Type, ch.ID, ch.Version)
			if ch.Record != nil {
				line += "\t" + cell(string(compact(ch.Record.Properties)), 100)
			}
			fmt.Fprintln(w, line)
		}
	}
}

// deltaView is what -o and --jq show of delta pages: {"commits": [...],
// "cursor": "..."}.
func deltaView(commits []views.Commit, cursor string) view {
	var names []string
	for _, c := range commits {
		for _, ch := range c.Changes {
			names = append(names, ch.Type+"/"+ch.ID)
		}
	}
	return view{
		value: map[string]any{"commits": orEmpty(commits), "cursor": cursor},
		kind:  "entity", names: names,
		table: func(tw io.Writer, _ bool) {
			fmt.Fprintln(tw, "SEQ\tKIND\tENTITY@VERSION\tPROPERTIES")
			writeChanges(tw, commits)
		},
	}
}

// resetHint explains a reset_required problem in terms of what to do.
func resetHint(err error) error {
	pe, ok := problemOf(err)
	if !ok || pe.Code != problem.ResetRequired {
		return err
	}
	// The server's problem, as every other error prints ("reset_required: ...").
	return fmt.Errorf("%w\nthe cursor no longer holds (%v): discard this view's local state and run 'eddy views bootstrap' again", pe, pe.Details["reason"])
}

// bootstrapFlags are the options of eddy views bootstrap.
type bootstrapFlags struct {
	strategy string
	pageSize int
	at       int64
	asJSON   bool
}

func (a *app) viewsBootstrapCommand() *cobra.Command {
	var f bootstrapFlags
	cmd := &cobra.Command{
		Use:   "bootstrap NAME [--strategy frozen|keyset] [--page-size N] [--at SEQ]",
		Short: "Read a whole view page by page and print its records and final cursor",
		Long: `Open a bootstrap of the view and read every page: the records the view holds
as of one watermark (the head when it opens, or --at, a retained seq), then
the cursor to follow its delta from (the last line, "cursor: ..."). Progress
goes to stderr. --strategy frozen (the default) materializes the view on the
server so retried pages are identical; keyset stores nothing. --json prints
each page as the server sent it, one per line.`,
		Example: `  eddy views bootstrap open-tasks
  eddy views bootstrap open-tasks --strategy keyset --page-size 500 --json > pages.ndjson`,
		Args: exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.bootstrapView(cmd, args[0], f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.strategy, "strategy", "frozen", "frozen or keyset")
	fl.IntVar(&f.pageSize, "page-size", 100, "records per page (1..1000)")
	fl.Int64Var(&f.at, "at", 0, "snapshot as of this retained seq (default: the head)")
	fl.BoolVar(&f.asJSON, "json", false, "print the server's pages as ndjson")
	return cmd
}

func (a *app) bootstrapView(cmd *cobra.Command, name string, f bootstrapFlags) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	p := client.BootstrapOptions{PageSize: f.pageSize, Strategy: f.strategy}
	if cmd.Flags().Changed("at") {
		p.At = &f.at
	}
	v := c.sp.View(name)
	open, err := v.Open(cmd.Context(), p)
	if err != nil {
		return resetHint(err)
	}
	gather := a.formatted() // -o or --jq: one document at the end
	var all []bootstrapRecord
	total := 0
	for tok, n := open.Token, 1; ; n++ {
		page, err := v.Page(cmd.Context(), tok)
		if err != nil {
			return resetHint(err)
		}
		recs, err := pageRecords(page)
		if err != nil {
			return err
		}
		if gather {
			all = append(all, recs...)
		} else if err := a.printPage(page, recs, f.asJSON); err != nil {
			return err
		}
		total += len(recs)
		fmt.Fprintf(a.stderr, "page %d: %d records (%d so far)\n", n, len(recs), total)
		if page.NextToken == nil {
			if gather {
				return a.show(bootstrapView(all, page.Cursor), false)
			}
			if !f.asJSON && page.Cursor != nil {
				fmt.Fprintf(a.stdout, "cursor: %s\n", *page.Cursor)
			}
			return nil
		}
		tok = *page.NextToken
	}
}

// bootstrapView is what -o and --jq show of a whole bootstrap:
// {"records": [...], "cursor": "..."}, a record per row of the table.
func bootstrapView(recs []bootstrapRecord, cursor *string) view {
	names := make([]string, len(recs))
	for i, r := range recs {
		names[i] = r.Type + "/" + r.ID
	}
	return view{
		value: map[string]any{"records": orEmpty(recs), "cursor": cursor},
		kind:  "entity", names: names,
		table: func(tw io.Writer, _ bool) {
			fmt.Fprintln(tw, "TYPE\tID\tVERSION\tPROPERTIES")
			for _, r := range recs {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", r.Type, r.ID, r.Version, cell(string(compact(r.Properties)), 100))
			}
		},
	}
}

// bootstrapRecord is a record of a bootstrap page as the CLI prints it.
type bootstrapRecord struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Version    int64           `json:"version"`
	Properties json.RawMessage `json:"properties"`
}

// pageRecords decodes a bootstrap page's records.
func pageRecords(page client.BootstrapPage) ([]bootstrapRecord, error) {
	var recs []bootstrapRecord
	if len(page.Records) > 0 {
		if err := json.Unmarshal(page.Records, &recs); err != nil {
			return nil, fmt.Errorf("decode page records: %w", err)
		}
	}
	return recs, nil
}

// printPage prints a page: its JSON on one line, or a line per record.
func (a *app) printPage(page client.BootstrapPage, recs []bootstrapRecord, asJSON bool) error {
	if asJSON {
		return a.printLine(page)
	}
	for _, r := range recs {
		fmt.Fprintf(a.stdout, "%s\t%s\t%d\t%s\n", r.Type, r.ID, r.Version, cell(string(compact(r.Properties)), 100))
	}
	return nil
}

// deltaFlags are the options of eddy views delta.
type deltaFlags struct {
	cursor string
	budget int
	all    bool
	asJSON bool
}

func (a *app) viewsDeltaCommand() *cobra.Command {
	var f deltaFlags
	cmd := &cobra.Command{
		Use:   "delta NAME --cursor C [--budget N] [--all]",
		Short: "Print the view's changes after a cursor (one delta page, or --all of them)",
		Long: `Read the view's delta after --cursor: the changes of up to --budget source
commits (default 100), whole commits only; commits with nothing for the view
are skipped while the cursor moves over them. Each change is one line: seq,
kind (upsert, removed_from_scope or deleted), type/id@version, and the record's
properties for an upsert. The last line is the cursor to continue from.
--all reads page after page until the view is caught up, with progress on
stderr. A cursor that no longer holds (the view, its types' schema or the
space's epoch changed, or its history was pruned) fails with
reset_required: bootstrap again.`,
		Example: `  eddy views delta open-tasks --cursor "$CURSOR" --all`,
		Args:    exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if f.cursor == "" {
				return usagef("missing --cursor (the cursor of the last bootstrap or delta page)")
			}
			return a.deltaView(cmd, args[0], f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.cursor, "cursor", "", "the cursor to continue after")
	fl.IntVar(&f.budget, "budget", 100, "source commits per page (1..10000)")
	fl.BoolVar(&f.all, "all", false, "read pages until the view is caught up")
	fl.BoolVar(&f.asJSON, "json", false, "print the server's pages as ndjson")
	return cmd
}

func (a *app) deltaView(cmd *cobra.Command, name string, f deltaFlags) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	gather := a.formatted() // -o or --jq: one document at the end
	var all []views.Commit
	cur := f.cursor
	for n := 1; ; n++ {
		page, err := c.sp.View(name).Delta(cmd.Context(), cur, f.budget)
		if err != nil {
			return resetHint(err)
		}
		if gather {
			all = append(all, page.Commits...)
		} else if f.asJSON {
			if err := a.printLine(page); err != nil {
				return err
			}
		} else {
			a.printChanges(page.Commits)
		}
		cur = page.Cursor
		if !f.all || !page.HasMore {
			if gather {
				return a.show(deltaView(all, cur), false)
			}
			if !f.asJSON {
				fmt.Fprintf(a.stdout, "cursor: %s\n", cur)
			}
			return nil
		}
		fmt.Fprintf(a.stderr, "page %d read; more follow\n", n)
	}
}

// viewWatchFlags are the options of eddy views watch.
type viewWatchFlags struct {
	cursor string
	budget int
	asJSON bool
}

func (a *app) viewsWatchCommand() *cobra.Command {
	var f viewWatchFlags
	cmd := &cobra.Command{
		Use:   "watch NAME --cursor C",
		Short: "Follow the view's live stream after a cursor",
		Long: `Follow the live view stream (GET .../delta?cursor=C&watch=1): one line per change
as commits land, printed like 'eddy views delta'. A dropped connection is
resumed from the last cursor the stream gave, with backoff. A reset (the
view, its types' schema or the space's epoch changed) ends the watch with
exit 1: bootstrap again. Ctrl-C ends it with exit 0 and prints the last
cursor on stderr. --json prints the server's frames unchanged.`,
		Example: `  eddy views watch open-tasks --cursor "$CURSOR"`,
		Args:    exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if err := a.refuseFormat("views watch"); err != nil {
				return err
			}
			if f.cursor == "" {
				return usagef("missing --cursor (the cursor of the last bootstrap or delta page)")
			}
			return a.watchView(cmd.Context(), args[0], f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.cursor, "cursor", "", "the cursor to continue after")
	fl.IntVar(&f.budget, "budget", 100, "source commits per frame (1..10000)")
	fl.BoolVar(&f.asJSON, "json", false, "print the server's ndjson frames unchanged")
	return cmd
}

// viewWatcher is the state of one eddy views watch.
type viewWatcher struct {
	a      *app
	c      *conn
	name   string
	cursor string
	f      viewWatchFlags
}

func (a *app) watchView(ctx context.Context, name string, f viewWatchFlags) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	w := &viewWatcher{a: a, c: c, name: name, cursor: f.cursor, f: f}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = w.run(ctx)
	if ctx.Err() != nil {
		fmt.Fprintf(a.stderr, "cursor: %s\n", w.cursor)
		return nil
	}
	return resetHint(err)
}

// run streams and resumes until ctx ends or a failure is final.
func (w *viewWatcher) run(ctx context.Context) error {
	delay := watchBackoffMin
	for opened := false; ; {
		ok, err := w.stream(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		opened = opened || ok
		if final(err) || !opened {
			return err
		}
		fmt.Fprintf(w.a.stderr, "eddy: connection lost (%v); resuming in %v\n", plainErr(err), delay)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, watchBackoffMax)
	}
}

// stream runs one stream from w.cursor; it reports whether the server
// answered 200 and always returns how the stream ended.
func (w *viewWatcher) stream(ctx context.Context) (bool, error) {
	// The stream's pages do not repeat the view's context, and the CLI
	// does not need it: it prints the commits.
	vs, err := w.c.sp.View(w.name).Watch(ctx, client.ViewContext{}, w.cursor,
		client.ViewStreamOptions{Budget: w.f.budget, IdleTimeout: -1, HeaderTimeout: watchHeaderTimeout})
	if err != nil {
		return false, err
	}
	defer vs.Close()
	for {
		ev, err := vs.Next()
		if err != nil {
			return true, err
		}
		if err := w.event(ev); err != nil {
			return true, err
		}
	}
}

// event prints one page (--json: as JSON, one line each; progress as
// {"cursor": ...}) and moves the cursor.
func (w *viewWatcher) event(ev client.ViewEvent) error {
	switch {
	case w.f.asJSON && ev.Page != nil:
		p := *ev.Page
		p.Context = client.ViewContext{}
		if err := w.a.printLine(struct {
			PreviousCursor string              `json:"previousCursor"`
			Cursor         string              `json:"cursor"`
			Commits        []client.ViewCommit `json:"commits"`
			Acks           map[string]int64    `json:"acks,omitempty"`
		}{p.PreviousCursor, p.Cursor, p.Commits, p.Acks}); err != nil {
			return err
		}
	case w.f.asJSON && ev.Cursor != w.cursor:
		if err := w.a.printLine(map[string]string{"cursor": ev.Cursor}); err != nil {
			return err
		}
	case ev.Page != nil:
		w.a.printChanges(ev.Page.Commits)
	}
	if ev.Cursor != "" {
		w.cursor = ev.Cursor
	}
	return nil
}
