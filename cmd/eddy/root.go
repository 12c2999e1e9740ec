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
	output string
	jq     string // --jq EXPR

	// contextFlag is --context; ctx is the context in use, loaded once.
	contextFlag string
	ctxLoaded   bool
	ctx         cliContext
	ctxName     string
	ctxErr      error

	// tokenSource says where the token of this run came from ("--token",
	// "EDDY_TOKEN", a file's path), set once connect resolved it.
	tokenSource string
}

// rootCommand builds the command tree.
func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "eddy",
		Short: "eddy: a trigger and functions runtime built on one changelog",
		Long: `eddy keeps entities and, in the same transaction as every write, appends one
row to a gapless per-space changelog. 'eddy serve' runs the server; the other
commands talk to a running server over HTTP.`,
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetIn(a.stdin)
	root.SetVersionTemplate("eddy {{.Version}}\n")
	// Commands read a.space and a.server: resolve them once the flags are
	// parsed (the flag, the environment, the context's, or the default).
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		a.space, a.server = a.spaceName(), a.serverURL()
		return a.checkOutput()
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })

	pf := root.PersistentFlags()
	pf.StringVar(&a.data, "data", eddy.DefaultDataDir, "data directory (serve keeps its files there; clients read "+tokenFile+" from it)")
	pf.StringVar(&a.server, "server", "", "server URL (default: env EDDY_SERVER, else "+defaultServer+")")
	pf.StringVar(&a.token, "token", "", "API token (default: env EDDY_TOKEN, else <data>/"+tokenFile+")")
	pf.StringVar(&a.contextFlag, "context", "", "context to use (default: env EDDY_CONTEXT, else the config's current context)")
	pf.StringVarP(&a.output, "output", "o", "", "output of commands that print resources: json, yaml, wide, name or jsonpath=TEMPLATE")
	pf.StringVar(&a.jq, "jq", "", "filter the JSON output of commands that print resources with a jq expression (strings print raw, like gh --jq)")
	pf.StringVar(&a.space, "space", "", "space to work in (default: env EDDY_SPACE, else "+eddy.DefaultSpace+")")

	root.AddCommand(
		a.serveCommand(),
		a.putCommand(), a.patchCommand(), a.deleteCommand(), a.getCommand(), a.listCommand(),
		a.changesCommand(), a.historyCommand(), a.logCommand(), a.watchCommand(),
		a.causesCommand(), a.stancesCommand(), a.fenceCommand(),
		a.typesCommand(), a.applyCommand(), a.functionsCommand(), a.triggersCommand(), a.deliveriesCommand(), a.viewsCommand(), a.journalCommand(),
		a.tokensCommand(), a.pruneCommand(), a.spacesCommand(), a.syncCommand(),
	)
	// Config in git, contexts and the version (kept apart from the list
	// above so commands added there merge cleanly).
	root.AddCommand(a.diffCommand(), a.exportCommand(), a.configCommand(), a.versionCommand())
	a.addCompletions(root)
	return root
}

// envOr returns the environment variable name, or def when it is empty.
func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

// serverURL is the server of this run: --server, else EDDY_SERVER, else
// the context's, else the default.
func (a *app) serverURL() string {
	if a.server != "" {
		return a.server
	}
	c, _, _ := a.currentContext()
	return envOr(a.getenv, "EDDY_SERVER", cmpOr(c.Server, defaultServer))
}

// spaceName is the space of this run: --space, else EDDY_SPACE, else the
// context's, else the default space.
func (a *app) spaceName() string {
	if a.space != "" {
		return a.space
	}
	c, _, _ := a.currentContext()
	return envOr(a.getenv, "EDDY_SPACE", cmpOr(c.Space, eddy.DefaultSpace))
}

// cmpOr returns s, or def when s is empty.
func cmpOr(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

// findToken finds the token in --token, EDDY_TOKEN, the context's
// token file or <data>/admin.token, in that order, and says which it
// used.
func (a *app) findToken() (token, source string, err error) {
	if a.token != "" {
		return a.token, "--token", nil
	}
	if t := a.getenv("EDDY_TOKEN"); t != "" {
		return t, "EDDY_TOKEN", nil
	}
	c, name, err := a.currentContext()
	if err != nil {
		return "", "", err
	}
	if c.TokenFile != "" {
		tok, err := readTokenFile(c.TokenFile)
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", usagef("no token: context %s names %s, which does not exist", name, c.TokenFile)
		}
		if err != nil {
			return "", "", err
		}
		return tok, "context " + name + " (" + c.TokenFile + ")", nil
	}
	path := filepath.Join(a.data, tokenFile)
	tok, err := readTokenFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", usagef("no token: set EDDY_TOKEN, pass --token, use a context with a token file (eddy config set-context), or point --data at a directory holding %s (eddy serve creates it)", tokenFile)
	}
	if err != nil {
		return "", "", err
	}
	return tok, path, nil
}

// readTokenFile reads a token file (its first line, trimmed).
func readTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
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
