package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/problem"
)

// viewChange is one projected change of a delta page or stream frame.
type viewChange struct {
	Kind    string          `json:"kind"`
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Version int64           `json:"version"`
	Record  json.RawMessage `json:"record"`
}

// viewCommit is one source commit of a delta page.
type viewCommit struct {
	Seq     int64        `json:"seq"`
	Changes []viewChange `json:"changes"`
}

// deltaFrame is a delta page, or a frame of the live view stream.
type deltaFrame struct {
	PreviousCursor string         `json:"previousCursor"`
	Cursor         string         `json:"cursor"`
	HasMore        bool           `json:"hasMore"`
	Commits        []viewCommit   `json:"commits"`
	Error          *problem.Error `json:"error"`
}

// printChanges prints a page's changes, one line each.
func (a *app) printChanges(commits []viewCommit) {
	for _, c := range commits {
		for _, ch := range c.Changes {
			line := fmt.Sprintf("%d\t%s\t%s/%s@%d", c.Seq, ch.Kind, ch.Type, ch.ID, ch.Version)
			if len(ch.Record) > 0 {
				var rec struct {
					Properties json.RawMessage `json:"properties"`
				}
				if json.Unmarshal(ch.Record, &rec) == nil {
					line += "\t" + cell(string(compact(rec.Properties)), 100)
				}
			}
			fmt.Fprintln(a.stdout, line)
		}
	}
}

// resetHint explains a reset_required problem in terms of what to do.
func resetHint(err error) error {
	var pe *problem.Error
	if !errors.As(err, &pe) || pe.Code != problem.ResetRequired {
		return err
	}
	return fmt.Errorf("%w\nthe cursor no longer holds (%v): discard this view's local state and run 'eddy views bootstrap' again", err, pe.Details["reason"])
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
	c, err := a.client()
	if err != nil {
		return err
	}
	body := map[string]any{"pageSize": f.pageSize, "strategy": f.strategy}
	if cmd.Flags().Changed("at") {
		body["at"] = f.at
	}
	b, _ := json.Marshal(body) // plain values
	resp, err := c.do(cmd.Context(), request{method: http.MethodPost, path: spacePath(a.space, "views", name, "bootstrap"), body: b})
	if err != nil {
		return err
	}
	var open struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(resp.body, &open); err != nil {
		return fmt.Errorf("decode bootstrap: %w", err)
	}
	total := 0
	for tok, n := open.Token, 1; ; n++ {
		page, raw, err := a.bootstrapPage(cmd.Context(), c, name, tok)
		if err != nil {
			return resetHint(err)
		}
		total += len(page.Records)
		if err := a.printPage(page, raw, f.asJSON); err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "page %d: %d records (%d so far)\n", n, len(page.Records), total)
		if page.NextToken == nil {
			if !f.asJSON && page.Cursor != nil {
				fmt.Fprintf(a.stdout, "cursor: %s\n", *page.Cursor)
			}
			return nil
		}
		tok = *page.NextToken
	}
}

// bootstrapPageBody is one bootstrap page.
type bootstrapPageBody struct {
	Records []struct {
		Type       string          `json:"type"`
		ID         string          `json:"id"`
		Version    int64           `json:"version"`
		Properties json.RawMessage `json:"properties"`
	} `json:"records"`
	NextToken *string `json:"nextToken"`
	Cursor    *string `json:"cursor"`
}

func (a *app) bootstrapPage(ctx context.Context, c *client, name, tok string) (bootstrapPageBody, []byte, error) {
	var page bootstrapPageBody
	raw, err := c.getJSON(ctx, spacePath(a.space, "views", name, "bootstrap", tok), nil, &page)
	return page, raw, err
}

func (a *app) printPage(page bootstrapPageBody, raw []byte, asJSON bool) error {
	if asJSON {
		_, err := fmt.Fprintf(a.stdout, "%s\n", compact(raw))
		return err
	}
	for _, r := range page.Records {
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
	c, err := a.client()
	if err != nil {
		return err
	}
	cur := f.cursor
	for n := 1; ; n++ {
		q := url.Values{"cursor": {cur}, "budget": {strconv.Itoa(f.budget)}}
		var page deltaFrame
		raw, err := c.getJSON(cmd.Context(), spacePath(a.space, "views", name, "delta"), q, &page)
		if err != nil {
			return resetHint(err)
		}
		if f.asJSON {
			fmt.Fprintf(a.stdout, "%s\n", compact(raw))
		} else {
			a.printChanges(page.Commits)
		}
		cur = page.Cursor
		if !f.all || !page.HasMore {
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
	c      *client
	hc     *http.Client
	name   string
	cursor string
	f      viewWatchFlags
}

func (a *app) watchView(ctx context.Context, name string, f viewWatchFlags) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = watchHeaderTimeout
	defer tr.CloseIdleConnections()
	w := &viewWatcher{a: a, c: c, hc: &http.Client{Transport: tr}, name: name, cursor: f.cursor, f: f}
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
		fmt.Fprintf(w.a.stderr, "eddy: connection lost (%v); resuming in %v\n", err, delay)
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
	u := *w.c.base
	u.Path += spacePath(w.a.space, "views", w.name, "delta")
	u.RawQuery = url.Values{"cursor": {w.cursor}, "budget": {strconv.Itoa(w.f.budget)}, "watch": {"1"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+w.c.token)
	resp, err := w.hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return false, decodeProblem(resp.StatusCode, body)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return true, errStreamEnded
			}
			return true, err
		}
		if err := w.frame(line); err != nil {
			return true, err
		}
	}
}

// frame prints one frame and moves the cursor; a terminal frame is
// returned as its problem.
func (w *viewWatcher) frame(line []byte) error {
	var f deltaFrame
	if err := json.Unmarshal(line, &f); err != nil {
		return fmt.Errorf("bad frame %q: %w", cell(string(line), 80), err)
	}
	if f.Error != nil {
		return f.Error
	}
	if w.f.asJSON {
		if _, err := w.a.stdout.Write(line); err != nil {
			return err
		}
	} else {
		w.a.printChanges(f.Commits)
	}
	if f.Cursor != "" {
		w.cursor = f.Cursor
	}
	return nil
}
