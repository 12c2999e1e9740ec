package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
)

// completionTimeout bounds the server calls of one completion.
const completionTimeout = 3 * time.Second

// nameLister lists the names of one kind of resource for completion.
type nameLister func(ctx context.Context, sp *client.Space) ([]string, error)

// completions are the commands whose first argument is a resource name,
// by command path below eddy, and how to list the names.
func (a *app) completions() map[string]nameLister {
	triggers := listTriggerNames
	functions := listFunctionNames
	views := listViewNames
	types := listTypeNames
	deliveries := listDeliveryIDs
	m := map[string]nameLister{
		"types get": types, "types delete": types,
		"get": types, "list": types, "put": types, "patch": types, "delete": types,
		"functions get": functions, "functions delete": functions, "functions test": functions,
		"views get": views, "views delete": views, "views bootstrap": views, "views delta": views,
		"views watch": views, "views backtest": views,
		"deliveries retry": deliveries, "deliveries release": deliveries, "deliveries discard": deliveries,
	}
	for _, op := range []string{"get", "describe", "enable", "disable", "reset", "replay", "backtest", "run", "delete"} {
		m["triggers "+op] = triggers
	}
	return m
}

// flagCompletions are flags that take a resource name, by flag name.
func flagCompletions() map[string]nameLister {
	return map[string]nameLister{"trigger": listTriggerNames, "triggers": listTriggerNames, "types": listTypeNames, "type": listTypeNames}
}

// addCompletions attaches name completion to the commands and flags
// that take resource names; cobra's `eddy completion bash|zsh|fish|
// powershell` emits the scripts that call it.
func (a *app) addCompletions(root *cobra.Command) {
	byPath := a.completions()
	flags := flagCompletions()
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		path := strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), root.Name()), " ")
		if list, ok := byPath[path]; ok && cmd.ValidArgsFunction == nil {
			cmd.ValidArgsFunction = a.completeFirst(list)
		}
		for name, list := range flags {
			if cmd.LocalNonPersistentFlags().Lookup(name) != nil {
				_ = cmd.RegisterFlagCompletionFunc(name, a.completeAny(list))
			}
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(
		[]string{outJSON, outYAML, outWide, outName, outJSONPath + "="}, cobra.ShellCompDirectiveNoFileComp|cobra.ShellCompDirectiveNoSpace))
	_ = root.RegisterFlagCompletionFunc("context", a.completeContexts)
}

// completeFirst completes the first positional argument with names.
func (a *app) completeFirst(list nameLister) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return a.completeAny(list)(cmd, args, toComplete)
	}
}

// completeAny completes with the names list finds (none when the
// server cannot be asked).
func (a *app) completeAny(list nameLister) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, err := a.connect()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		names, err := list(ctx, c.sp)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names = slices.DeleteFunc(names, func(n string) bool { return !strings.HasPrefix(n, toComplete) })
		slices.Sort(names)
		return slices.Compact(names), cobra.ShellCompDirectiveNoFileComp
	}
}

func listTriggerNames(ctx context.Context, sp *client.Space) ([]string, error) {
	ts, err := sp.Triggers(ctx)
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out, err
}

func listFunctionNames(ctx context.Context, sp *client.Space) ([]string, error) {
	fs, err := sp.Functions(ctx)
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out, err
}

func listViewNames(ctx context.Context, sp *client.Space) ([]string, error) {
	vs, err := sp.Views(ctx)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out, err
}

func listTypeNames(ctx context.Context, sp *client.Space) ([]string, error) {
	ts, err := sp.Types(ctx)
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Type
	}
	return out, err
}

// listDeliveryIDs lists the deliveries an operator acts on (failed,
// parked, retrying, pending) across the space's triggers, first pages
// only.
func listDeliveryIDs(ctx context.Context, sp *client.Space) ([]string, error) {
	names, err := listTriggerNames(ctx, sp)
	if err != nil {
		return nil, err
	}
	var out []string
	p := client.DeliveriesParams{Status: []string{client.DeliveryFailed, client.DeliveryParked, client.DeliveryRetrying, client.DeliveryPending}}
	for _, n := range names {
		page, err := sp.Deliveries(ctx, n, p)
		if err != nil {
			return out, err
		}
		for _, d := range page.Deliveries {
			out = append(out, d.ID)
		}
	}
	return out, nil
}
