package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// deliveryInfo is a delivery as the server shows it.
type deliveryInfo struct {
	ID     string `json:"id"`
	Seq    int64  `json:"seq"`
	Entity struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"entity"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	Depth         int        `json:"depth"`
	LastError     string     `json:"lastError"`
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
}

// deliveryPage is a page of GET .../triggers/{name}/deliveries.
type deliveryPage struct {
	Deliveries []deliveryInfo `json:"deliveries"`
	Next       string         `json:"next"`
}

// deliveryListFlags are the options of `eddy deliveries list`.
type deliveryListFlags struct {
	trigger  string
	statuses []string
	limit    int
	after    string
	all      bool
	asJSON   bool
}

func (a *app) deliveriesCommand() *cobra.Command {
	return group(&cobra.Command{
		Use:   "deliveries",
		Short: "List a trigger's deliveries; retry, release or discard one, or all that match",
	}, a.deliveriesListCommand(),
		a.deliveryOpCommand("retry", "Queue a failed delivery again with a fresh attempt budget (admin)"),
		a.deliveryOpCommand("release", "Run a parked delivery once more, past the causality cap (admin)"),
		a.deliveryOpCommand("discard", "Give up a delivery that has not succeeded (admin)"),
		a.deliveriesBulkCommand())
}

func (a *app) deliveriesListCommand() *cobra.Command {
	var f deliveryListFlags
	cmd := &cobra.Command{
		Use:   "list --trigger NAME [--status failed,parked] [--limit N] [--all]",
		Short: "List a trigger's deliveries, oldest row first",
		Long: `List the deliveries of the trigger NAME in the order of the rows that caused
them, as a table (--json prints the server's pages). --status keeps the
given statuses: pending, running, retrying, succeeded, failed, parked,
discarded. One page of --limit deliveries (default 100) unless --all.`,
		Example: `  eddy deliveries list --trigger stamp-completed --status failed,parked
  eddy deliveries list --trigger stamp-completed --all --json`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if f.trigger == "" {
				return usagef("missing --trigger NAME")
			}
			if f.limit < 0 {
				return usagef("--limit must not be negative")
			}
			return a.listDeliveries(cmd, f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.trigger, "trigger", "", "the trigger whose deliveries to list (required)")
	fl.StringSliceVar(&f.statuses, "status", nil, "only deliveries with these statuses")
	fl.IntVar(&f.limit, "limit", 0, "deliveries per page (0 = the server's default, 100)")
	fl.StringVar(&f.after, "after", "", "continue after this page token ('next' of the previous page)")
	fl.BoolVar(&f.all, "all", false, "follow 'next' through every page")
	fl.BoolVar(&f.asJSON, "json", false, "print the server's JSON pages instead of a table")
	return cmd
}

// listDeliveries prints one page of deliveries, or every page with --all.
func (a *app) listDeliveries(cmd *cobra.Command, f deliveryListFlags) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	q := url.Values{}
	if len(f.statuses) > 0 {
		q.Set("status", strings.Join(f.statuses, ","))
	}
	if f.limit > 0 {
		q.Set("limit", strconv.Itoa(f.limit))
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	after := f.after
	for first := true; ; first = false {
		if after != "" {
			q.Set("after", after)
		}
		var page deliveryPage
		body, err := c.getJSON(cmd.Context(), spacePath(a.space, "triggers", f.trigger, "deliveries"), q, &page)
		if err != nil {
			return err
		}
		if err := a.printDeliveries(tw, body, page, f.asJSON, first); err != nil {
			return err
		}
		if page.Next == "" {
			return nil
		}
		if !f.all {
			_ = tw.Flush()
			fmt.Fprintf(a.stderr, "more: next page with --after %s (or --all)\n", page.Next)
			return nil
		}
		after = page.Next
	}
}

// printDeliveries prints one page: its JSON, or table lines (after the
// header on the first page).
func (a *app) printDeliveries(tw *tabwriter.Writer, body []byte, page deliveryPage, asJSON, first bool) error {
	if asJSON {
		return a.printJSON(body)
	}
	if first {
		fmt.Fprintln(tw, "ID\tSEQ\tENTITY\tSTATUS\tATTEMPTS\tDEPTH\tLAST ERROR\tNEXT ATTEMPT")
	}
	for _, d := range page.Deliveries {
		fmt.Fprintln(tw, deliveryLine(d))
	}
	return nil
}

// deliveryLine is one table line.
func deliveryLine(d deliveryInfo) string {
	next := "-"
	if d.NextAttemptAt != nil {
		next = d.NextAttemptAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s\t%d\t%s\t%s\t%d\t%d\t%s\t%s", d.ID, d.Seq, cell(d.Entity.Type+"/"+d.Entity.ID, 48),
		d.Status, d.Attempts, d.Depth, orDash(cell(d.LastError, 60)), next)
}

// deliveryOpCommand is `eddy deliveries retry|release|discard ID`.
func (a *app) deliveryOpCommand(op, short string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   op + " ID",
		Short: short,
		Args:  exactArgs("ID"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			resp, err := c.do(cmd.Context(), request{method: http.MethodPost, path: spacePath(a.space, "deliveries", args[0], op)})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(resp.body)
			}
			var d deliveryInfo
			if err := json.Unmarshal(resp.body, &d); err != nil {
				return fmt.Errorf("decode delivery: %w", err)
			}
			fmt.Fprintf(a.stdout, "delivery %s: %s (attempts %d, seq %d, %s/%s)\n", d.ID, d.Status, d.Attempts, d.Seq, d.Entity.Type, d.Entity.ID)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}
