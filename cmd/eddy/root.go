package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/eddy-run/eddy"
)

// Defaults of the global flags.
const (
	defaultServer = "http://127.0.0.1:7070"
	tokenFile     = "admin.token"
)

// app holds the process environment of one run and the global flags.
type app struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	getenv         func(string) string

	server string
	data   string
	token  string
	space  string
}

// rootCommand builds the command tree.
func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "eddy",
		Short: "eddy: a trigger and functions runtime built on one changelog",
		Long: `eddy keeps entities and, in the same transaction as every write, appends one
row to a gapless per-space changelog. 'eddy serve' runs the server; the other
commands talk to a running server over HTTP.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetIn(a.stdin)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })

	pf := root.PersistentFlags()
	pf.StringVar(&a.data, "data", eddy.DefaultDataDir, "data directory (serve keeps its files there; clients read "+tokenFile+" from it)")
	pf.StringVar(&a.server, "server", envOr(a.getenv, "EDDY_SERVER", defaultServer), "server URL (env EDDY_SERVER)")
	pf.StringVar(&a.token, "token", "", "API token (default: env EDDY_TOKEN, else <data>/"+tokenFile+")")
	pf.StringVar(&a.space, "space", eddy.DefaultSpace, "space to work in")

	root.AddCommand(
		a.serveCommand(),
		a.putCommand(), a.patchCommand(), a.deleteCommand(), a.getCommand(), a.listCommand(),
		a.changesCommand(), a.historyCommand(), a.logCommand(), a.watchCommand(),
		a.causesCommand(), a.stancesCommand(), a.fenceCommand(),
		a.typesCommand(), a.applyCommand(), a.functionsCommand(), a.triggersCommand(), a.deliveriesCommand(), a.viewsCommand(), a.journalCommand(),
		a.tokensCommand(), a.pruneCommand(), a.spacesCommand(), a.syncCommand(),
	)
	return root
}

// envOr returns the environment variable name, or def when it is empty.
func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

// client returns an API client for the global flags, finding the token in
// --token, EDDY_TOKEN or <data>/admin.token, in that order.
func (a *app) client() (*client, error) {
	tok, err := a.resolveToken()
	if err != nil {
		return nil, err
	}
	return newClient(a.server, tok)
}

func (a *app) resolveToken() (string, error) {
	if a.token != "" {
		return a.token, nil
	}
	if t := a.getenv("EDDY_TOKEN"); t != "" {
		return t, nil
	}
	path := filepath.Join(a.data, tokenFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", usagef("no token: set EDDY_TOKEN, pass --token, or point --data at a directory holding %s (eddy serve creates it)", tokenFile)
	}
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", usagef("no token: %s is empty", path)
	}
	return tok, nil
}

// action wraps a command body so that its errors exit 1 unless they are
// usage errors.
func action(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		var ue *usageError
		if err == nil || errors.As(err, &ue) {
			return err
		}
		return &commandError{err: err}
	}
}

// exactArgs requires n positional arguments, named in the error.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usagef("%s: want %d argument(s) (%s), got %d", cmd.CommandPath(), len(names), strings.Join(names, " "), len(args))
		}
		return nil
	}
}

// group makes cmd a group of subcommands: run bare it prints its help, and
// an unknown subcommand is a usage error.
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
		}
		return cmd.Help()
	}
	cmd.AddCommand(subs...)
	return cmd
}

// noArgs rejects positional arguments (and names an unknown command).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return nil
}
