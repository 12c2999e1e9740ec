package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy/client"
)

// writeOptions are the flags shared by put and patch.
type writeOptions struct {
	file           string
	ifMatch        int64
	idempotencyKey string
}

func (o *writeOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "read the JSON object from a file ('-' for stdin)")
	f.Int64Var(&o.ifMatch, "if-match", 0, "apply only if the entity's version is this (If-Match)")
	f.StringVar(&o.idempotencyKey, "idempotency-key", "", "mutation id: a retry with the same key appends nothing (Idempotency-Key)")
}

// options returns the write options the flags set.
func (o *writeOptions) options(cmd *cobra.Command) client.WriteOptions {
	wo := client.WriteOptions{IdempotencyKey: o.idempotencyKey}
	if cmd.Flags().Changed("if-match") {
		wo.IfMatch = client.Version(o.ifMatch)
	}
	return wo
}

func (a *app) putCommand() *cobra.Command {
	var o writeOptions
	cmd := &cobra.Command{
		Use:   "put TYPE ID ['{json}' | -]",
		Short: "Replace an entity's properties (creating it if needed)",
		Example: `  eddy put task t1 '{"title": "write docs", "status": "open"}'
  eddy put task t1 -f task.json
  echo '{"title": "x"}' | eddy put task t1 -`,
		Args: entityWriteArgs,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.writeEntity(cmd, (*client.Space).Put, args, &o)
		}),
	}
	o.register(cmd)
	return cmd
}

func (a *app) patchCommand() *cobra.Command {
	var o writeOptions
	cmd := &cobra.Command{
		Use:   "patch TYPE ID ['{json}' | -]",
		Short: "Merge-patch an entity's properties (RFC 7386: null removes)",
		Example: `  eddy patch task t1 '{"status": "done", "note": null}'
  eddy patch task t1 --if-match 3 '{"status": "done"}'`,
		Args: entityWriteArgs,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.writeEntity(cmd, (*client.Space).Patch, args, &o)
		}),
	}
	o.register(cmd)
	return cmd
}

// entityWriteArgs accepts TYPE ID and an optional body argument.
func entityWriteArgs(cmd *cobra.Command, args []string) error {
	if len(args) < 2 || len(args) > 3 {
		return usagef("%s: want TYPE ID and a JSON object (an argument, -f FILE or - for stdin), got %d argument(s)", cmd.CommandPath(), len(args))
	}
	return nil
}

// writeEntity sends a put or patch and prints the {receipt, entity} answer.
func (a *app) writeEntity(cmd *cobra.Command, write entityWrite, args []string, o *writeOptions) error {
	body, err := a.readObject(args[2:], o.file)
	if err != nil {
		return err
	}
	c, err := a.connect()
	if err != nil {
		return err
	}
	res, err := write(c.sp, cmd.Context(), args[0], args[1], json.RawMessage(body), o.options(cmd))
	if err != nil {
		return err
	}
	return a.showWrite(res)
}

// entityWrite is Space.Put or Space.Patch.
type entityWrite func(s *client.Space, ctx context.Context, typ, id string, body any, opts ...client.WriteOptions) (client.WriteResult, error)

// showWrite prints a write's {receipt, entity} answer.
func (a *app) showWrite(res client.WriteResult) error {
	return a.show(view{value: res, kind: "entity", names: entityNames(res.Entity)}, false)
}

// entityNames is -o name of one record (none after a delete).
func entityNames(r *client.Record) []string {
	if r == nil {
		return []string{}
	}
	return []string{r.Type + "/" + r.ID}
}

// readObject returns the JSON object given as an argument, in a file
// (-f, "-" for stdin), or on stdin (argument "-"), checking that it is one.
func (a *app) readObject(args []string, file string) ([]byte, error) {
	var data []byte
	var err error
	switch {
	case len(args) == 1 && file != "":
		return nil, usagef("give the JSON object as an argument or with -f, not both")
	case len(args) == 1 && args[0] != "-":
		data = []byte(args[0])
	case len(args) == 1:
		data, err = a.readFile("-")
	case file != "":
		data, err = a.readFile(file)
	default:
		return nil, usagef("missing the JSON object: pass it as an argument, with -f FILE, or - for stdin")
	}
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, usagef("the body must be a JSON object, got %s", preview(trimmed))
	}
	return trimmed, nil
}

// readFile reads a file, or stdin for "-".
func (a *app) readFile(name string) ([]byte, error) {
	if name == "-" {
		data, err := io.ReadAll(a.stdin)
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		return data, nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, usagef("read %s: %v", name, err)
	}
	return data, nil
}

// preview shortens input for an error message.
func preview(b []byte) string {
	const n = 40
	if len(b) == 0 {
		return "nothing"
	}
	if len(b) > n {
		return strconv.Quote(string(b[:n]) + "…")
	}
	return strconv.Quote(string(b))
}

func (a *app) deleteCommand() *cobra.Command {
	var o writeOptions
	cmd := &cobra.Command{
		Use:   "delete TYPE ID",
		Short: "Delete an entity (it leaves a tombstone in the log)",
		Args:  exactArgs("TYPE", "ID"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			res, err := c.sp.Delete(cmd.Context(), args[0], args[1], o.options(cmd))
			if err != nil {
				return err
			}
			return a.showWrite(res)
		}),
	}
	cmd.Flags().Int64Var(&o.ifMatch, "if-match", 0, "delete only if the entity's version is this (If-Match)")
	cmd.Flags().StringVar(&o.idempotencyKey, "idempotency-key", "", "mutation id (Idempotency-Key)")
	return cmd
}

func (a *app) getCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get TYPE ID",
		Short: "Print one entity",
		Args:  exactArgs("TYPE", "ID"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			c, err := a.connect()
			if err != nil {
				return err
			}
			rec, err := c.sp.Get(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			return a.show(view{value: rec, kind: "entity", names: entityNames(&rec), table: recordTable([]client.Record{rec}), wideOnly: true}, false)
		}),
	}
}

// listOptions are the flags of eddy list.
type listOptions struct {
	limit int
	after string
	all   bool
}

func (a *app) listCommand() *cobra.Command {
	var o listOptions
	cmd := &cobra.Command{
		Use:   "list TYPE",
		Short: "List entities of a type, one JSON object per line",
		Long: `List entities of a type, one JSON object per line, in id order. Every page is
consistent as of one head; with --all the pages follow 'next' until the end.`,
		Args: exactArgs("TYPE"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if o.limit < 0 {
				return usagef("--limit must not be negative")
			}
			return a.list(cmd, args[0], o)
		}),
	}
	f := cmd.Flags()
	f.IntVar(&o.limit, "limit", 0, "page size (0 = the server's default)")
	f.StringVar(&o.after, "after", "", "continue after this page token ('next' of the previous page)")
	f.BoolVar(&o.all, "all", false, "follow 'next' through every page")
	return cmd
}

func (a *app) list(cmd *cobra.Command, typ string, o listOptions) error {
	c, err := a.connect()
	if err != nil {
		return err
	}
	p := client.ListParams{Limit: o.limit, After: o.after}
	var all []client.Record
	for {
		page, err := c.sp.List(cmd.Context(), typ, p)
		if err != nil {
			return err
		}
		if !a.formatted() {
			for _, it := range page.Items {
				if err := a.printLine(it); err != nil {
					return err
				}
			}
		}
		all = append(all, page.Items...)
		if page.Next == "" {
			break
		}
		if !o.all {
			fmt.Fprintf(a.stderr, "more: next page with --after %s (or --all)\n", page.Next)
			break
		}
		p.After = page.Next
	}
	if !a.formatted() {
		return nil
	}
	return a.show(view{value: map[string]any{"items": orEmpty(all)}, kind: "entity", names: recordNames(all), table: recordTable(all)}, false)
}

// recordNames is -o name of records: TYPE/ID each.
func recordNames(rs []client.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Type + "/" + r.ID
	}
	return out
}

// recordTable is the -o wide table of records (for get and list alike).
func recordTable(rs []client.Record) func(io.Writer, bool) {
	return func(w io.Writer, wide bool) {
		if wide {
			fmt.Fprintln(w, "TYPE\tID\tVERSION\tUPDATED (UTC)\tPROPERTIES")
		} else {
			fmt.Fprintln(w, "TYPE\tID\tVERSION\tPROPERTIES")
		}
		for _, r := range rs {
			props := cell(string(compact(r.Properties)), 72)
			if wide {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", r.Type, r.ID, r.Version, r.UpdatedAt.UTC().Format("2006-01-02 15:04:05"), string(compact(r.Properties)))
				continue
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", r.Type, r.ID, r.Version, props)
		}
	}
}

// orEmpty returns s, or an empty slice for nil (so JSON shows []).
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
