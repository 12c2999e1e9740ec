package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"github.com/spf13/cobra"
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

func (o *writeOptions) header(cmd *cobra.Command) http.Header {
	h := http.Header{}
	if cmd.Flags().Changed("if-match") {
		h.Set("If-Match", strconv.FormatInt(o.ifMatch, 10))
	}
	if o.idempotencyKey != "" {
		h.Set("Idempotency-Key", o.idempotencyKey)
	}
	return h
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
			return a.writeEntity(cmd, http.MethodPut, "application/json", args, &o)
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
			return a.writeEntity(cmd, http.MethodPatch, "application/merge-patch+json", args, &o)
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
func (a *app) writeEntity(cmd *cobra.Command, method, ctype string, args []string, o *writeOptions) error {
	body, err := a.readObject(args[2:], o.file)
	if err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	resp, err := c.do(cmd.Context(), request{
		method: method, path: spacePath(a.space, "entities", args[0], args[1]),
		body: body, ctype: ctype, header: o.header(cmd),
	})
	if err != nil {
		return err
	}
	return a.printJSON(resp.body)
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
			c, err := a.client()
			if err != nil {
				return err
			}
			resp, err := c.do(cmd.Context(), request{
				method: http.MethodDelete, path: spacePath(a.space, "entities", args[0], args[1]), header: o.header(cmd),
			})
			if err != nil {
				return err
			}
			return a.printJSON(resp.body)
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
			c, err := a.client()
			if err != nil {
				return err
			}
			body, err := c.getJSON(cmd.Context(), spacePath(a.space, "entities", args[0], args[1]), nil, nil)
			if err != nil {
				return err
			}
			return a.printJSON(body)
		}),
	}
}

// listOptions are the flags of eddy list.
type listOptions struct {
	limit int
	after string
	all   bool
}

// listPage is a page of GET .../entities/{type}.
type listPage struct {
	Items []json.RawMessage `json:"items"`
	Head  int64             `json:"head"`
	Next  string            `json:"next"`
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
	c, err := a.client()
	if err != nil {
		return err
	}
	after := o.after
	for {
		q := url.Values{}
		if o.limit > 0 {
			q.Set("limit", strconv.Itoa(o.limit))
		}
		if after != "" {
			q.Set("after", after)
		}
		var page listPage
		if _, err := c.getJSON(cmd.Context(), spacePath(a.space, "entities", typ), q, &page); err != nil {
			return err
		}
		for _, it := range page.Items {
			fmt.Fprintf(a.stdout, "%s\n", compact(it))
		}
		if page.Next == "" {
			return nil
		}
		if !o.all {
			fmt.Fprintf(a.stderr, "more: next page with --after %s (or --all)\n", page.Next)
			return nil
		}
		after = page.Next
	}
}
