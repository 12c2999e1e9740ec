package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
)

// bulkRequest is the body of POST .../deliveries/bulk.
type bulkRequest = client.BulkParams

// bulkResult is its answer.
type bulkResult = client.BulkResult

// bulkActions are the actions `eddy deliveries bulk` takes.
var bulkActions = []string{"retry", "release", "discard"}

func (a *app) deliveriesBulkCommand() *cobra.Command {
	var (
		req    bulkRequest
		yes    bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "bulk retry|release|discard [--trigger NAME] [--status S,...] [--when CEL] [--yes]",
		Short: "Retry, release or discard every delivery that matches (admin)",
		Long: `Count the deliveries that match (--trigger, --status, and --when, a CEL
expression over each delivery's row) and that the action applies to
(retry: failed; release: parked; discard: pending, retrying, failed,
parked), and show the first ones, parked chains first. Nothing changes
without --yes; with it the action runs on them, provided the same number
still matches (else nothing is done).`,
		Example: `  eddy deliveries bulk retry --trigger notify-on-change
  eddy deliveries bulk retry --trigger notify-on-change --yes
  eddy deliveries bulk discard --status parked --when 'row.type == "ping"' --yes`,
		Args: exactArgs("ACTION"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(bulkActions, args[0]) {
				return usagef("ACTION %q: want retry, release or discard", args[0])
			}
			req.Action = args[0]
			return a.bulkDeliveries(cmd, req, yes, asJSON)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Trigger, "trigger", "", "only this trigger's deliveries (default: every trigger's)")
	fl.StringSliceVar(&req.Status, "status", nil, "only deliveries with these statuses")
	fl.StringVar(&req.When, "when", "", "only deliveries whose row this CEL expression over row matches")
	fl.BoolVar(&yes, "yes", false, "act on the deliveries counted (without it, only count)")
	fl.BoolVar(&asJSON, "json", false, "print the server's JSON answers")
	return cmd
}

// bulkDeliveries counts the matching deliveries and, with yes, acts on
// exactly that many.
func (a *app) bulkDeliveries(cmd *cobra.Command, req bulkRequest, yes, asJSON bool) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	asJSON = asJSON || a.formatted()
	post := func(r bulkRequest) (bulkResult, error) {
		out, err := c.sp.BulkDeliveries(cmd.Context(), r)
		if err != nil {
			return out, err
		}
		if asJSON {
			return out, a.show(view{value: out, kind: "delivery", names: sampleIDs(out.Sample)}, true)
		}
		return out, nil
	}
	dry := req
	dry.DryRun = true
	count, err := post(dry)
	if err != nil {
		return err
	}
	if !asJSON {
		a.printBulkCount(req.Action, count, yes)
	}
	if !yes || count.Matched == 0 {
		return nil
	}
	req.Expect = &count.Matched
	done, err := post(req)
	if err != nil {
		return err
	}
	if !asJSON {
		fmt.Fprintf(a.stdout, "%s: %d done, %d skipped\n", req.Action, done.Done, done.Skipped)
		for _, e := range done.Errors {
			msg := "skipped"
			if e.Error != nil {
				msg = e.Error.Message
			}
			fmt.Fprintf(a.stdout, "  skipped %s: %s\n", e.ID, msg)
		}
		if done.More {
			fmt.Fprintln(a.stderr, "more matched than one request takes: run it again")
		}
	}
	return nil
}

// sampleIDs are the ids of a dry run's sample, for -o name.
func sampleIDs(ds []client.Delivery) []string {
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	return ids
}

// printBulkCount prints what a dry run counted.
func (a *app) printBulkCount(action string, r bulkResult, yes bool) {
	more := ""
	if r.More {
		more = "+"
	}
	fmt.Fprintf(a.stdout, "%d%s deliveries match for %s\n", r.Matched, more, action)
	for _, d := range r.Sample {
		fmt.Fprintf(a.stdout, "  %s  seq %d  %s/%s  %s\n", d.ID, d.Seq, d.Entity.Type, d.Entity.ID, d.Status)
	}
	if r.Matched > len(r.Sample) {
		fmt.Fprintf(a.stdout, "  … and %d more\n", r.Matched-len(r.Sample))
	}
	if !yes && r.Matched > 0 {
		fmt.Fprintf(a.stderr, "nothing changed: run it again with --yes to %s them\n", action)
	}
}
