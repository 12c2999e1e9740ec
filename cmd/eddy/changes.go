package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
)

// filterOptions are the row filter flags shared by changes and history.
type filterOptions struct {
	types, ops, actors                      []string
	excludeTypes, excludeOps, excludeActors []string
	q                                       string
	entity                                  string
}

func (o *filterOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringSliceVar(&o.types, "types", nil, "only rows of these entity types")
	f.StringSliceVar(&o.ops, "ops", nil, "only rows of these ops (put, patch, delete, link, unlink, merge, split, ...)")
	f.StringSliceVar(&o.actors, "actors", nil, "only rows written by these actors")
	f.StringSliceVar(&o.excludeTypes, "exclude-types", nil, "drop rows of these entity types")
	f.StringSliceVar(&o.excludeOps, "exclude-ops", nil, "drop rows of these ops")
	f.StringSliceVar(&o.excludeActors, "exclude-actors", nil, "drop rows written by these actors")
	f.StringVar(&o.q, "q", "", "free text over type, entity id, actor and payload")
	f.StringVar(&o.entity, "entity", "", "only rows of one entity, as TYPE/ID")
}

// filter returns the flags as a client filter.
func (o *filterOptions) filter() (client.Filter, error) {
	f := client.Filter{
		Types: o.types, Ops: o.ops, Actors: o.actors,
		ExcludeTypes: o.excludeTypes, ExcludeOps: o.excludeOps, ExcludeActors: o.excludeActors, Q: o.q,
	}
	if o.entity != "" {
		typ, id, ok := strings.Cut(o.entity, "/")
		if !ok || typ == "" || id == "" {
			return client.Filter{}, usagef("--entity %q: want TYPE/ID", o.entity)
		}
		f.EntityType, f.EntityID = typ, id
	}
	return f, nil
}

// row is a wire row as the CLI prints it.
type row = client.Row

// pageOptions are the paging and output flags of changes and history.
type pageOptions struct {
	pos   int64
	limit int
	all   bool
	json  bool
}

func (a *app) historyCommand() *cobra.Command {
	var (
		o  pageOptions
		fo filterOptions
	)
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Page backward through the changelog, newest first",
		Long: `Page backward through the changelog, newest first, until --limit rows (default
100) are shown or the log ends: the server scans a bounded number of rows per
page, so a filtered page may be short, and the walk keeps asking (a spinner
on a terminal says it is scanning). --all walks to the end. Prints a table;
--json prints the server's pages, -o json|yaml|jsonpath=... the rows shown.`,
		Example: `  eddy history --limit 20
  eddy history --types task --ops put,patch --all
  eddy history --entity task/t1 --json`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if o.pos < 0 || o.limit < 0 {
				return usagef("--before and --limit must not be negative")
			}
			return a.history(cmd, o, fo)
		}),
	}
	cmd.Flags().Int64Var(&o.pos, "before", 0, "only rows with seq below this (0 = from the head)")
	o.register(cmd)
	fo.register(cmd)
	return cmd
}

func (a *app) changesCommand() *cobra.Command {
	var (
		o  pageOptions
		fo filterOptions
	)
	cmd := &cobra.Command{
		Use:   "changes",
		Short: "Read the changelog forward from a position",
		Long: `Read the changelog forward: rows with seq greater than --from, oldest first,
until --limit rows (default 100) are shown or the head is reached; short
filtered pages do not stop the walk (a spinner on a terminal says it is
scanning). With --all the walk goes on up to the head. Prints a table;
--json prints the server's pages, -o json|yaml|jsonpath=... the rows shown.`,
		Example: `  eddy changes --from 0
  eddy changes --from 120 --types task --all`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if o.pos < 0 || o.limit < 0 {
				return usagef("--from and --limit must not be negative")
			}
			return a.changes(cmd, o, fo)
		}),
	}
	cmd.Flags().Int64Var(&o.pos, "from", 0, "only rows with seq above this (exclusive; default: the horizon)")
	o.register(cmd)
	fo.register(cmd)
	return cmd
}

func (o *pageOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&o.limit, "limit", 0, "rows to show, and per page (0 = the server's default, 100)")
	f.BoolVar(&o.all, "all", false, "follow the cursor through every page")
	f.BoolVar(&o.json, "json", false, "print the server's JSON pages instead of a table")
}

// defaultRows is how many rows history and changes show without
// --limit (the server's default page size).
const defaultRows = 100

// walk is one history or changes walk: it pages until it has shown its
// goal of rows or the log ends.
type walk struct {
	a     *app
	o     pageOptions
	t     *rowTable
	spin  *spinner
	shown int
}

// goal returns how many more rows the walk wants (-1: all).
func (w *walk) goal() int {
	if w.o.all {
		return -1
	}
	n := w.o.limit
	if n == 0 {
		n = defaultRows
	}
	return n - w.shown
}

// pageLimit is the limit of the next request.
func (w *walk) pageLimit() int {
	if g := w.goal(); g > 0 && (w.o.limit > 0 || g < defaultRows) {
		return g
	}
	return w.o.limit
}

// take prints a page and reports whether the goal is met.
func (w *walk) take(page any, rows []row) (bool, error) {
	w.spin.stop()
	if err := w.t.page(page, rows); err != nil {
		return false, err
	}
	w.shown += len(rows)
	return w.goal() == 0, nil
}

func (a *app) newWalk(o pageOptions) *walk {
	return &walk{a: a, o: o, t: a.newRowTable(o.json), spin: a.newSpinner()}
}

// history walks backward from o.pos (0 = the head).
func (a *app) history(cmd *cobra.Command, o pageOptions, fo filterOptions) error {
	c, f, err := a.pageSetup(fo)
	if err != nil {
		return err
	}
	w := a.newWalk(o)
	defer w.t.flush()
	before := o.pos
	for {
		page, err := c.sp.History(cmd.Context(), client.HistoryParams{Before: before, Limit: w.pageLimit(), Filter: f})
		if err != nil {
			w.spin.stop()
			return err
		}
		done, err := w.take(page, page.Changes)
		if err != nil || page.Cursor == nil {
			return err
		}
		next := *page.Cursor
		if before != 0 && next >= before {
			return fmt.Errorf("server cursor %d did not move below %d", next, before)
		}
		if done {
			w.t.flush()
			fmt.Fprintf(a.stderr, "more: next page with --before %d (or --all)\n", next)
			return nil
		}
		w.spin.show(fmt.Sprintf("scanning history: %d rows shown, at seq %d", w.shown, next))
		before = next
	}
}

// changes walks forward from o.pos up to the head.
func (a *app) changes(cmd *cobra.Command, o pageOptions, fo filterOptions) error {
	c, f, err := a.pageSetup(fo)
	if err != nil {
		return err
	}
	// The walk ends at the head (a short page is not the end: filters
	// scan a bounded number of rows).
	info, err := c.sp.Info(cmd.Context())
	if err != nil {
		return err
	}
	// Without --from the walk starts where retained history starts.
	from := o.pos
	if !cmd.Flags().Changed("from") {
		from = info.Horizon
	}
	w := a.newWalk(o)
	defer w.t.flush()
	for {
		page, err := c.sp.Changes(cmd.Context(), client.ChangesParams{From: from, Limit: w.pageLimit(), Filter: f})
		if err != nil {
			w.spin.stop()
			return err
		}
		done, err := w.take(page, page.Changes)
		if err != nil || page.Cursor <= from || page.Cursor >= info.Head {
			return err
		}
		from = page.Cursor
		if done {
			w.t.flush()
			fmt.Fprintf(a.stderr, "more: next page with --from %d (or --all)\n", from)
			return nil
		}
		w.spin.show(fmt.Sprintf("scanning changes: %d rows shown, at seq %d of %d", w.shown, from, info.Head))
	}
}

// pageSetup returns the connection and the filter of a changes walk.
func (a *app) pageSetup(fo filterOptions) (*conn, client.Filter, error) {
	f, err := fo.filter()
	if err != nil {
		return nil, client.Filter{}, err
	}
	c, err := a.connect()
	if err != nil {
		return nil, client.Filter{}, err
	}
	return c, f, nil
}

// rowTable prints rows as a table, pages as JSON (--json), or, with -o,
// gathers the rows to print them at the end.
type rowTable struct {
	a      *app
	json   bool
	tw     *tabwriter.Writer
	header bool
	rows   []row // gathered for -o
}

func (a *app) newRowTable(asJSON bool) *rowTable {
	return &rowTable{a: a, json: asJSON && !a.formatted(), tw: tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)}
}

// page prints one page.
func (t *rowTable) page(page any, rows []row) error {
	if t.json {
		return t.a.printValue(page)
	}
	if t.a.formatted() {
		t.rows = append(t.rows, rows...)
		return nil
	}
	if !t.header {
		fmt.Fprintln(t.tw, "SEQ\tTIME (UTC)\tACTOR\tOP\tTYPE\tID\tPAYLOAD")
		t.header = true
	}
	for _, r := range rows {
		fmt.Fprintf(t.tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.TS.UTC().Format("2006-01-02 15:04:05.000"),
			cell(r.Actor, 24), r.Op, cell(r.Type, 32), cell(r.EntityID, 32), cell(string(compact(r.Payload)), 72))
	}
	return nil
}

// flush ends the table (with -o: prints the gathered rows, once).
func (t *rowTable) flush() {
	if t.a.formatted() && t.rows != nil {
		rows := t.rows
		t.rows = nil
		names := make([]string, len(rows))
		for i, r := range rows {
			names[i] = strconv.FormatInt(r.Seq, 10)
		}
		if err := t.a.show(view{value: map[string]any{"changes": rows}, kind: "change", names: names, table: t.table(rows)}, false); err != nil {
			fmt.Fprintf(t.a.stderr, "error: %v\n", err)
		}
		return
	}
	_ = t.tw.Flush()
}

// table is the -o wide table of rows.
func (t *rowTable) table(rows []row) func(io.Writer, bool) {
	return func(tw io.Writer, _ bool) {
		fmt.Fprintln(tw, "SEQ\tTIME (UTC)\tACTOR\tOP\tTYPE\tID\tPAYLOAD")
		for _, r := range rows {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.TS.UTC().Format("2006-01-02 15:04:05.000"),
				r.Actor, r.Op, r.Type, r.EntityID, string(compact(r.Payload)))
		}
	}
}

// cell shortens s to at most n runes and keeps it on one line.
func cell(s string, n int) string {
	s = strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// logOptions are the flags of eddy log.
type logOptions struct {
	after  int64
	limit  int
	follow bool
}

func (a *app) logCommand() *cobra.Command {
	var o logOptions
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Pull raw commits (changes, receipts, provenance); needs log:read",
		Long: `Pull raw commits after a cursor: whole commits with their changes, receipts
and provenance, as the server's JSON pages. --limit is a soft budget in
changes. Needs an admin token or one with the log:read scope.`,
		Example: `  eddy log --after 0 --limit 100
  eddy log --after 0 --follow-pages | jq -c '.commits[]'`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if o.after < 0 || o.limit < 0 {
				return usagef("--after and --limit must not be negative")
			}
			return a.pull(cmd, o)
		}),
	}
	f := cmd.Flags()
	f.Int64Var(&o.after, "after", 0, "cursor: pull commits with seq above this (default: the horizon)")
	f.IntVar(&o.limit, "limit", 0, "soft budget in changes per page (0 = the server's default)")
	f.BoolVar(&o.follow, "follow-pages", false, "keep pulling while hasMore")
	return cmd
}

func (a *app) pull(cmd *cobra.Command, o logOptions) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	after := o.after
	if !cmd.Flags().Changed("after") {
		// Without --after the pull starts where retained history starts.
		info, err := c.sp.Info(cmd.Context())
		if err != nil {
			return err
		}
		after = info.Horizon
	}
	for {
		page, err := c.sp.Pull(cmd.Context(), client.PullParams{After: after, Limit: o.limit})
		if err != nil {
			return err
		}
		if err := a.show(view{value: page, kind: "change"}, true); err != nil {
			return err
		}
		if !page.HasMore {
			return nil
		}
		if !o.follow {
			fmt.Fprintf(a.stderr, "more: next page with --after %d (or --follow-pages)\n", page.NextCursor)
			return nil
		}
		if page.NextCursor <= after {
			return fmt.Errorf("server cursor %d did not move past %d", page.NextCursor, after)
		}
		after = page.NextCursor
	}
}
