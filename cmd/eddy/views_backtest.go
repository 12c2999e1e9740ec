package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/views"
)

// viewBacktestChunk is how many commits one view backtest request judges.
const viewBacktestChunk = 10_000

// viewBacktestFlags are the options of eddy views backtest.
type viewBacktestFlags struct {
	from, to, chunk int64
	samples         int
	file            string
	asJSON          bool
}

// transitions are the sample keys, in print order.
var transitions = []string{"entered", "left", "updated", "deleted"}

// addBacktest sums a chunk into r, keeping the first samples of each
// transition.
func addBacktest(r *views.BacktestResult, c views.BacktestResult, samples int) {
	r.View, r.To = c.View, c.To
	r.Scanned += c.Scanned
	r.Entered += c.Entered
	r.Left += c.Left
	r.Updated += c.Updated
	r.Deleted += c.Deleted
	r.Truncated = r.Truncated || c.Truncated
	if r.SizeAtFrom == nil {
		r.SizeAtFrom = c.SizeAtFrom
	}
	for _, k := range transitions {
		for _, s := range c.Samples[k] {
			if len(r.Samples[k]) < samples {
				r.Samples[k] = append(r.Samples[k], s)
			}
		}
	}
}

func (a *app) viewsBacktestCommand() *cobra.Command {
	var f viewBacktestFlags
	cmd := &cobra.Command{
		Use:   "backtest NAME [--from N] [--to M] [-f proposed-view.yaml]",
		Short: "Judge the history (from, to] with a view: its size at both ends and what entered or left it",
		Long: `Judge the committed changes (--from, --to] with the view NAME (or, with -f, the
definition in the file, under NAME and without saving it) and print the view's
size at both ends and how many changes made an entity enter, leave, stay
(updated) or be deleted, with sample ids. Nothing is sent or recorded, so a
filter change can be judged before it resets clients. --to defaults to the
head; the range is walked in chunks of 10000 commits with progress on stderr.`,
		Example: `  eddy views backtest open-tasks --from 0
  eddy views backtest open-tasks -f open-tasks-v2.yaml`,
		Args: exactArgs("NAME"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.backtestView(cmd, args[0], f)
		}),
	}
	fl := cmd.Flags()
	fl.Int64Var(&f.from, "from", 0, "judge the commits after this seq")
	fl.Int64Var(&f.to, "to", 0, "judge the commits up to this seq (default the head)")
	fl.IntVar(&f.samples, "samples", 10, "sample ids kept per transition (1..100)")
	fl.StringVarP(&f.file, "file", "f", "", "a proposed view definition to judge instead of the saved one")
	fl.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	fl.Int64Var(&f.chunk, "chunk", viewBacktestChunk, "commits judged per request")
	_ = fl.MarkHidden("chunk")
	return cmd
}

func (a *app) backtestView(cmd *cobra.Command, name string, f viewBacktestFlags) error {
	if f.chunk < 1 || f.samples < 1 {
		return usagef("--chunk and --samples must be at least 1")
	}
	var def json.RawMessage
	if f.file != "" {
		var err error
		if def, err = a.readDefinition(f.file); err != nil {
			return err
		}
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
	total := views.BacktestResult{From: f.from, To: f.from, Samples: map[string][]views.BacktestSample{}}
	for lo, first := f.from, true; ; first = false {
		hi := max(min(lo+f.chunk, to), lo)
		sizes := first
		r, err := c.sp.View(name).Backtest(cmd.Context(), client.ViewBacktestParams{From: lo, To: hi, Samples: f.samples, Definition: def, Sizes: &sizes})
		if err != nil {
			return err
		}
		addBacktest(&total, r, f.samples)
		if to-f.from > f.chunk {
			fmt.Fprintf(a.stderr, "judged %d/%d\n", r.To-f.from, to-f.from)
		}
		if r.Truncated || r.To >= to || r.To <= lo {
			break
		}
		lo = r.To
	}
	if total.SizeAtFrom != nil {
		end := *total.SizeAtFrom + total.Entered - total.Left - total.Deleted
		total.SizeAtTo = &end
	}
	if f.asJSON || a.formatted() {
		return a.show(view{value: total, kind: "view", names: []string{name}}, f.asJSON)
	}
	return a.printViewBacktest(total)
}

func (a *app) printViewBacktest(r views.BacktestResult) error {
	fmt.Fprintf(a.stdout, "view %s, commits (%d, %d]: %d judged", r.View, r.From, r.To, r.Scanned)
	if r.Truncated {
		fmt.Fprint(a.stdout, " (truncated)")
	}
	fmt.Fprintln(a.stdout)
	if r.SizeAtFrom != nil && r.SizeAtTo != nil {
		fmt.Fprintf(a.stdout, "  size %d at %d, %d at %d\n", *r.SizeAtFrom, r.From, *r.SizeAtTo, r.To)
	}
	fmt.Fprintf(a.stdout, "  entered %d, left %d, updated %d, deleted %d\n", r.Entered, r.Left, r.Updated, r.Deleted)
	for _, k := range transitions {
		if len(r.Samples[k]) == 0 {
			continue
		}
		ids := make([]string, len(r.Samples[k]))
		for i, s := range r.Samples[k] {
			ids[i] = fmt.Sprintf("%s/%s@%d", s.Type, s.ID, s.Seq)
		}
		fmt.Fprintf(a.stdout, "  %s: %s\n", k, strings.Join(ids, " "))
	}
	return nil
}
