package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/eddy-run/eddy/client"
)

// Backtest chunking.
const (
	// backtestChunk is how many seqs one backtest request judges.
	backtestChunk = 10_000
	// backtestErrorSamples is how many error samples the CLI keeps.
	backtestErrorSamples = 5
)

// backtestFlags are the options of `eddy triggers backtest`.
type backtestFlags struct {
	from, to, chunk int64
	samples         int
	file            string
	asJSON          bool
}

// backtestSample is one sampled row of a backtest answer.
type backtestSample = client.BacktestSample

// backtestResult is the answer of POST .../triggers/{name}/backtest, and
// the sum of the CLI's chunks.
type backtestResult client.BacktestResult

// add sums the chunk r into b, keeping the first samples matches and the
// first few errors.
func (b *backtestResult) add(r backtestResult, samples int) {
	b.Trigger, b.To = r.Trigger, r.To
	b.Scanned += r.Scanned
	b.Matched += r.Matched
	b.NotMatched += r.NotMatched
	b.Echo += r.Echo
	b.Errors += r.Errors
	b.Coalesced += r.Coalesced
	b.ProjectedDepth = max(b.ProjectedDepth, r.ProjectedDepth)
	b.Truncated = b.Truncated || r.Truncated
	matches, errs := 0, 0
	for _, s := range b.Samples {
		if s.Stance == "error" {
			errs++
		} else {
			matches++
		}
	}
	for _, s := range r.Samples {
		switch {
		case s.Stance == "error" && errs < backtestErrorSamples:
			errs++
		case s.Stance != "error" && matches < samples:
			matches++
		default:
			continue
		}
		b.Samples = append(b.Samples, s)
	}
}

func (a *app) triggersBacktestCommand() *cobra.Command {
	var f backtestFlags
	cmd := &cobra.Command{
		Use:   "backtest NAME [--from N] [--to M] [--samples K] [-f changed-trigger.yaml]",
		Short: "Judge the history (from, to] with a trigger, without delivering anything",
		Long: `Judge the committed rows (--from, --to] with the trigger NAME as a live trigger
would (types, ops and actors, echo, then when) and print how many rows it
would match, the depth its deliveries would run at and sample rows. Nothing
is delivered or recorded. With -f, the trigger definition in the file (YAML
or JSON; "-" reads stdin) is tested under NAME instead, without saving it.
--to defaults to the head. The range is walked in chunks of 10000 seqs, with
progress on stderr.`,
		Args: exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.backtest(cmd, args[0], f)
		}),
	}
	cmd.Flags().Int64Var(&f.from, "from", 0, "judge the rows after this seq")
	cmd.Flags().Int64Var(&f.to, "to", 0, "judge the rows up to this seq (default the head)")
	cmd.Flags().IntVar(&f.samples, "samples", 10, "how many matched rows to show (1..100)")
	cmd.Flags().StringVarP(&f.file, "file", "f", "", "a changed trigger definition to test instead of the saved one")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	cmd.Flags().Int64Var(&f.chunk, "chunk", backtestChunk, "seqs judged per request")
	_ = cmd.Flags().MarkHidden("chunk")
	return cmd
}

// backtest walks the range in chunks and prints the summed result.
func (a *app) backtest(cmd *cobra.Command, name string, f backtestFlags) error {
	if f.chunk < 1 {
		return usagef("--chunk must be at least 1")
	}
	if f.samples < 1 {
		return usagef("--samples must be at least 1")
	}
	var def json.RawMessage
	if f.file != "" {
		data, err := a.readFile(f.file)
		if err != nil {
			return err
		}
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			return usagef("%s: %v", f.file, err)
		}
		def = js
	}
	c, err := a.connect()
	if err != nil {
		return err
	}
	to := f.to
	if to == 0 {
		info, err := c.sp.Info(cmd.Context())
		if err != nil {
			return err
		}
		to = info.Head
	}
	total := backtestResult{From: f.from, To: f.from, Samples: []backtestSample{}}
	for lo := f.from; ; {
		hi := min(lo+f.chunk, to)
		if lo > to {
			hi = to // the server refuses the range
		}
		p := client.BacktestParams{From: lo, To: hi, Samples: f.samples}
		if def != nil {
			p.Trigger = def
		}
		res, err := c.sp.BacktestTrigger(cmd.Context(), name, p)
		if err != nil {
			return err
		}
		r := backtestResult(res)
		total.add(r, f.samples)
		if to-f.from > f.chunk {
			fmt.Fprintf(a.stderr, "scanned %d/%d\n", r.To-f.from, to-f.from)
		}
		if r.Truncated || r.To >= to || r.To <= lo {
			break
		}
		lo = r.To
	}
	if f.asJSON || a.formatted() {
		return a.show(view{value: total, kind: "trigger", names: []string{name}}, f.asJSON)
	}
	return a.printBacktest(total)
}

// printBacktest prints a readable summary of a backtest.
func (a *app) printBacktest(r backtestResult) error {
	fmt.Fprintf(a.stdout, "trigger %s, seqs (%d, %d]: %d rows scanned", r.Trigger, r.From, r.To, r.Scanned)
	if r.Truncated {
		fmt.Fprint(a.stdout, " (truncated)")
	}
	fmt.Fprintf(a.stdout, "\n  matched %d, not matched %d, echo %d, errors %d, coalesced %d\n",
		r.Matched, r.NotMatched, r.Echo, r.Errors, r.Coalesced)
	fmt.Fprintf(a.stdout, "  projected depth %d\n", r.ProjectedDepth)
	if len(r.Samples) == 0 {
		return nil
	}
	fmt.Fprintln(a.stdout)
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTYPE\tENTITY\tOP\tSTANCE\tERROR")
	for _, s := range r.Samples {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", s.Seq, s.Type, s.EntityID, s.Op, s.Stance, orDash(s.Error))
	}
	return tw.Flush()
}
