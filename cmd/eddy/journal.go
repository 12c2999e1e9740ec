package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/store"
)

func (a *app) journalCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "journal",
		Short: "The per-user journal: sessions, pages, the initial fetch, the state check",
		Long: `The journal hands one user of one application everything that happened to the
entities that user may read, in commit order. Run these with a journal token
('eddy tokens create --role reader --user U --application A'). The loop: read
until hasMore is false, create a session while caught up and go on from its
cursor; rebuild (fetch + state check) only after a refused cursor.
docs/journal.md explains it.`,
	}, a.journalCapabilitiesCommand(), a.journalSessionCommand(), a.journalReadCommand(),
		a.journalFetchCommand(), a.journalStateCommand())
}

func (a *app) journalCapabilitiesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "capabilities",
		Short: "Print the safe window, the retention and the page limit (JSON)",
		Args:  noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			caps, err := c.sp.JournalCapabilities(cmd.Context())
			if err != nil {
				return err
			}
			return a.show(view{value: caps, kind: "journal"}, false)
		}),
	}
}

func (a *app) journalSessionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "session",
		Short: "Create a session: print its sessionId, cursor, cursorExpiresAt and fetchToken (JSON)",
		Args:  noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			ses, err := c.sp.JournalSession(cmd.Context())
			if err != nil {
				return err
			}
			return a.show(view{value: ses, kind: "session", names: []string{ses.SessionID}}, false)
		}),
	}
}

// journalReadOptions are the flags of eddy journal read.
type journalReadOptions struct {
	cursor string
	limit  int
	follow bool
	poll   time.Duration
	asJSON bool
}

func (a *app) journalReadCommand() *cobra.Command {
	var o journalReadOptions
	cmd := &cobra.Command{
		Use:   "read [--cursor C]",
		Short: "Read journal pages to the settled end (or follow it with --follow)",
		Long: `Read journal pages from --cursor (default: a new session's cursor) until
hasMore is false, printing one line per record ("SEQ KIND TYPE/ID", tombstones
with their reason) and warnings with "!". The last line is "cursor: C": pass it
as --cursor to go on. With --follow it keeps polling every --poll once caught
up until interrupted, then prints the last cursor. --json prints each page as
the server sent it, one per line.`,
		Example: `  eddy journal read --cursor "$(eddy journal session | jq -r .cursor)"
  eddy journal read --follow --json | jq -c '.records[]'`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if o.limit < 0 || o.poll <= 0 {
				return usagef("--limit must not be negative and --poll must be positive")
			}
			return a.journalRead(cmd.Context(), o)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.cursor, "cursor", "", "the cursor to read after (default: create a session and use its cursor)")
	f.IntVar(&o.limit, "limit", 0, "records per page (default: the server's page limit)")
	f.BoolVar(&o.follow, "follow", false, "keep polling once caught up, until interrupted")
	f.DurationVar(&o.poll, "poll", time.Second, "with --follow, how long to wait between polls once caught up")
	f.BoolVar(&o.asJSON, "json", false, "print each page's JSON, one per line")
	return cmd
}

// journalRead reads pages from o.cursor to the settled end, or follows.
func (a *app) journalRead(ctx context.Context, o journalReadOptions) error {
	if o.follow {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	c, err := a.connect()
	if err != nil {
		return err
	}
	if o.cursor == "" {
		ses, err := c.sp.JournalSession(ctx)
		if err != nil {
			return err
		}
		o.cursor = ses.Cursor
	}
	cur, err := a.journalPages(ctx, c, o)
	if !o.asJSON {
		fmt.Fprintf(a.stdout, "cursor: %s\n", cur)
	} else {
		fmt.Fprintf(a.stderr, "cursor: %s\n", cur)
	}
	if o.follow && ctx.Err() != nil {
		return nil // interrupted: the cursor above resumes
	}
	return err
}

// journalPages reads while hasMore (and, following, forever) and returns
// the last cursor it stood at.
func (a *app) journalPages(ctx context.Context, c *conn, o journalReadOptions) (string, error) {
	cur := o.cursor
	for {
		p, err := c.sp.Journal(ctx, cur, o.limit)
		if err != nil {
			return cur, err
		}
		a.printJournalPage(&p, o.asJSON)
		cur = p.NextCursor
		if p.HasMore {
			continue
		}
		if !o.follow {
			return cur, nil
		}
		select {
		case <-ctx.Done():
			return cur, ctx.Err()
		case <-time.After(o.poll):
		}
	}
}

func (a *app) printJournalPage(p *client.JournalPage, asJSON bool) {
	if asJSON {
		_ = a.printLine(p)
		return
	}
	for _, r := range p.Records {
		line := fmt.Sprintf("%d %s %s/%s", r.Seq, r.Kind, r.Type, r.ID)
		switch {
		case r.Reason != "":
			line += " " + r.Reason
		case r.Card != nil:
			line += " " + string(r.Card.Properties)
		}
		fmt.Fprintln(a.stdout, line)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(a.stdout, "! %d %s %s/%s\n", w.Seq, w.Reason, orDash(w.Type), orDash(w.ID))
	}
}

func (a *app) journalFetchCommand() *cobra.Command {
	var token string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "fetch --token T",
		Short: "Page a session's initial fetch: every entity the user may read as of the session",
		Long: `Read every page of the initial fetch of the session whose fetchToken is --token,
printing "TYPE/ID VERSION PROPERTIES" per entity (--json: one record per line).`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if token == "" {
				return usagef("--token is required: the fetchToken of 'eddy journal session'")
			}
			return a.journalFetch(cmd.Context(), token, limit, asJSON)
		}),
	}
	cmd.Flags().StringVar(&token, "token", "", "the session's fetchToken")
	cmd.Flags().IntVar(&limit, "limit", 0, "records per page (default: the server's page limit)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each record's JSON, one per line")
	return cmd
}

func (a *app) journalFetch(ctx context.Context, token string, limit int, asJSON bool) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	after := ""
	for {
		p, err := c.sp.JournalFetch(ctx, token, after, limit)
		if err != nil {
			return err
		}
		for _, r := range p.Records {
			if asJSON {
				b, _ := json.Marshal(r)
				fmt.Fprintln(a.stdout, string(b))
				continue
			}
			fmt.Fprintf(a.stdout, "%s/%s %d %s\n", r.Type, r.ID, r.Card.Version, r.Card.Properties)
		}
		if p.Next == nil {
			return nil
		}
		after = *p.Next
	}
}

func (a *app) journalStateCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "state TYPE/ID...",
		Short: "Ask whether entities are present, gone or hidden for the token's user",
		Args:  cobra.MinimumNArgs(1),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			ids := make([]store.EntityKey, len(args))
			for i, arg := range args {
				typ, id, ok := strings.Cut(arg, "/")
				if !ok || typ == "" || id == "" {
					return usagef("%q: want TYPE/ID", arg)
				}
				ids[i] = store.EntityKey{Type: typ, ID: id}
			}
			return a.journalState(cmd.Context(), ids, asJSON)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}

func (a *app) journalState(ctx context.Context, ids []store.EntityKey, asJSON bool) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	results, err := c.sp.JournalState(ctx, ids)
	if err != nil {
		return err
	}
	out := struct {
		Results []client.JournalState `json:"results"`
	}{orEmpty(results)}
	if asJSON || a.formatted() {
		return a.show(view{value: out, kind: "entity"}, asJSON)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tID\tSTATE\tVERSION")
	for _, r := range out.Results {
		v := "-"
		if r.Version > 0 {
			v = strconv.FormatInt(r.Version, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Type, r.ID, r.State, v)
	}
	return tw.Flush()
}
