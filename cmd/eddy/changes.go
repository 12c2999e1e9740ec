package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
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

// values returns the filter as query parameters.
func (o *filterOptions) values() (url.Values, error) {
	q := url.Values{}
	for name, vs := range map[string][]string{
		"types": o.types, "ops": o.ops, "actors": o.actors,
		"excludeTypes": o.excludeTypes, "excludeOps": o.excludeOps, "excludeActors": o.excludeActors,
	} {
		if len(vs) > 0 {
			q.Set(name, strings.Join(vs, ","))
		}
	}
	if o.q != "" {
		q.Set("q", o.q)
	}
	if o.entity != "" {
		typ, id, ok := strings.Cut(o.entity, "/")
		if !ok || typ == "" || id == "" {
			return nil, usagef("--entity %q: want TYPE/ID", o.entity)
		}
		q.Set("entityType", typ)
		q.Set("entityId", id)
	}
	return q, nil
}

// row is a wire row as the CLI prints it.
type row struct {
	Seq      int64           `json:"seq"`
	TS       time.Time       `json:"ts"`
	Actor    string          `json:"actor"`
	Op       string          `json:"op"`
	EntityID string          `json:"entityId"`
	Type     string          `json:"type"`
	Payload  json.RawMessage `json:"payload"`
}

// changesPage is a page of GET .../changes, forward or backward.
type changesPage struct {
	Changes []row  `json:"changes"`
	Cursor  *int64 `json:"cursor"`
}

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
		Long: `Page backward through the changelog, newest first. A page may be shorter than
--limit (filters scan a bounded number of rows): only the end of the walk
ends --all. Prints a table; --json prints the server's pages.`,
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
		Long: `Read the changelog forward: rows with seq greater than --from, oldest first.
With --all the pages follow the cursor up to the head. Prints a table;
--json prints the server's pages.`,
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
	f.IntVar(&o.limit, "limit", 0, "rows per page (0 = the server's default)")
	f.BoolVar(&o.all, "all", false, "follow the cursor through every page")
	f.BoolVar(&o.json, "json", false, "print the server's JSON pages instead of a table")
}

// history walks backward from o.pos (0 = the head).
func (a *app) history(cmd *cobra.Command, o pageOptions, fo filterOptions) error {
	c, q, err := a.pageSetup(o, fo)
	if err != nil {
		return err
	}
	before := o.pos
	t := a.newRowTable(o.json)
	defer t.flush()
	for {
		q.Set("before", strconv.FormatInt(before, 10))
		var page changesPage
		body, err := c.getJSON(cmd.Context(), spacePath(a.space, "changes"), q, &page)
		if err != nil {
			return err
		}
		if err := t.page(body, page.Changes); err != nil {
			return err
		}
		if page.Cursor == nil {
			return nil
		}
		next := *page.Cursor
		if before != 0 && next >= before {
			return fmt.Errorf("server cursor %d did not move below %d", next, before)
		}
		if !o.all {
			t.flush()
			fmt.Fprintf(a.stderr, "more: next page with --before %d (or --all)\n", next)
			return nil
		}
		before = next
	}
}

// changes walks forward from o.pos up to the head.
func (a *app) changes(cmd *cobra.Command, o pageOptions, fo filterOptions) error {
	c, q, err := a.pageSetup(o, fo)
	if err != nil {
		return err
	}
	// The walk ends at the head (a short page is not the end: filters
	// scan a bounded number of rows).
	var sp struct {
		Head    int64 `json:"head"`
		Horizon int64 `json:"horizon"`
	}
	if _, err := c.getJSON(cmd.Context(), spacePath(a.space), nil, &sp); err != nil {
		return err
	}
	// Without --from the walk starts where retained history starts.
	from := o.pos
	if !cmd.Flags().Changed("from") {
		from = sp.Horizon
	}
	t := a.newRowTable(o.json)
	defer t.flush()
	for {
		q.Set("from", strconv.FormatInt(from, 10))
		var page changesPage
		body, err := c.getJSON(cmd.Context(), spacePath(a.space, "changes"), q, &page)
		if err != nil {
			return err
		}
		if err := t.page(body, page.Changes); err != nil {
			return err
		}
		if page.Cursor == nil || *page.Cursor <= from || *page.Cursor >= sp.Head {
			return nil
		}
		from = *page.Cursor
		if !o.all {
			t.flush()
			fmt.Fprintf(a.stderr, "more: next page with --from %d (or --all)\n", from)
			return nil
		}
	}
}

// pageSetup returns the client and the base query of a changes page.
func (a *app) pageSetup(o pageOptions, fo filterOptions) (*client, url.Values, error) {
	q, err := fo.values()
	if err != nil {
		return nil, nil, err
	}
	if o.limit > 0 {
		q.Set("limit", strconv.Itoa(o.limit))
	}
	c, err := a.client()
	if err != nil {
		return nil, nil, err
	}
	return c, q, nil
}

// rowTable prints rows as a table, or pages as JSON.
type rowTable struct {
	a      *app
	json   bool
	tw     *tabwriter.Writer
	header bool
}

func (a *app) newRowTable(asJSON bool) *rowTable {
	return &rowTable{a: a, json: asJSON, tw: tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)}
}

// page prints one page.
func (t *rowTable) page(body []byte, rows []row) error {
	if t.json {
		return t.a.printJSON(body)
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

func (t *rowTable) flush() { _ = t.tw.Flush() }

// cell shortens s to at most n runes and keeps it on one line.
func cell(s string, n int) string {
	s = strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// pullPage is a page of GET .../log.
type pullPage struct {
	NextCursor int64 `json:"nextCursor"`
	HasMore    bool  `json:"hasMore"`
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
	c, err := a.client()
	if err != nil {
		return err
	}
	after := o.after
	if !cmd.Flags().Changed("after") {
		// Without --after the pull starts where retained history starts.
		var sp struct {
			Horizon int64 `json:"horizon"`
		}
		if _, err := c.getJSON(cmd.Context(), spacePath(a.space), nil, &sp); err != nil {
			return err
		}
		after = sp.Horizon
	}
	for {
		q := url.Values{"after": {strconv.FormatInt(after, 10)}}
		if o.limit > 0 {
			q.Set("limit", strconv.Itoa(o.limit))
		}
		var page pullPage
		body, err := c.getJSON(cmd.Context(), spacePath(a.space, "log"), q, &page)
		if err != nil {
			return err
		}
		if err := a.printJSON(body); err != nil {
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
