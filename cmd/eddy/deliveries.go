package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
)

// deliveryInfo is a delivery as the server shows it.
type deliveryInfo = client.Delivery

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
	c, err := a.connect()
	if err != nil {
		return err
	}
	p := client.DeliveriesParams{Status: f.statuses, Limit: f.limit, After: f.after}
	var all []deliveryInfo
	for {
		page, err := c.sp.Deliveries(cmd.Context(), f.trigger, p)
		if err != nil {
			return err
		}
		if f.asJSON && !a.formatted() {
			if err := a.printValue(page); err != nil { // one document per page
				return err
			}
		}
		all = append(all, page.Deliveries...)
		if page.Next == "" {
			break
		}
		if !f.all {
			defer fmt.Fprintf(a.stderr, "more: next page with --after %s (or --all)\n", page.Next)
			break
		}
		p.After = page.Next
	}
	if f.asJSON && !a.formatted() {
		return nil
	}
	return a.show(view{value: client.DeliveryPage{Deliveries: orEmpty(all)}, kind: "delivery", table: deliveryTable(all)}, false)
}

// deliveryTable is the table of deliveries.
func deliveryTable(ds []deliveryInfo) func(io.Writer, bool) {
	return func(tw io.Writer, wide bool) {
		head := "ID\tSEQ\tENTITY\tSTATUS\tATTEMPTS\tDEPTH\tLAST ERROR\tNEXT ATTEMPT"
		if wide {
			head += "\tTRIGGER\tCREATED (UTC)\tUPDATED (UTC)"
		}
		fmt.Fprintln(tw, head)
		for _, d := range ds {
			line := deliveryLine(d)
			if wide {
				line += fmt.Sprintf("\t%s\t%s\t%s", d.Trigger, d.CreatedAt.UTC().Format(time.RFC3339), d.UpdatedAt.UTC().Format(time.RFC3339))
			}
			fmt.Fprintln(tw, line)
		}
	}
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

// deliveryOps are the one-delivery operations by name.
var deliveryOps = map[string]func(*client.Space, context.Context, string) (client.Delivery, error){
	"retry": (*client.Space).RetryDelivery, "release": (*client.Space).ReleaseDelivery, "discard": (*client.Space).DiscardDelivery,
}

// deliveryOpCommand is `eddy deliveries retry|release|discard ID`.
func (a *app) deliveryOpCommand(op, short string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   op + " ID",
		Short: short,
		Args:  exactArgs("ID"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			d, err := deliveryOps[op](c.sp, cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON || a.formatted() {
				return a.show(view{value: d, kind: "delivery", table: deliveryTable([]deliveryInfo{d})}, asJSON)
			}
			fmt.Fprintf(a.stdout, "delivery %s: %s (attempts %d, seq %d, %s/%s)\n", d.ID, d.Status, d.Attempts, d.Seq, d.Entity.Type, d.Entity.ID)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the server's JSON answer")
	return cmd
}
