// Command offline is a small offline-first task list built on eddy's
// public clients: every edit is a local write queued in a SQLite file
// (views/client), visible at once through the optimistic read, and
// pushed with ordinals when the app syncs; the local replica of the
// task views converges on the server's, resets included. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	api "github.com/eddy-run/eddy/client"
	viewclient "github.com/eddy-run/eddy/views/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "offline:", err)
		os.Exit(1)
	}
}

// config is what the flags set.
type config struct {
	server, token, space, db string
	views                    []string
}

const usage = `usage: offline [flags] add TITLE [PROJECT] | done ID | rm ID | list | sync`

// parseFlags reads the flags; the server and token default to the eddy
// CLI's (EDDY_SERVER, EDDY_TOKEN, ./eddy-data/admin.token).
func parseFlags(args []string, w io.Writer) (config, []string, error) {
	server, token := api.Env()
	var cfg config
	var views string
	fs := flag.NewFlagSet("offline", flag.ContinueOnError)
	fs.SetOutput(w)
	fs.StringVar(&cfg.server, "server", server, "eddy's address (EDDY_SERVER)")
	fs.StringVar(&cfg.token, "token", token, "a writer token (EDDY_TOKEN, else ./eddy-data/admin.token)")
	fs.StringVar(&cfg.space, "space", "default", "the space")
	fs.StringVar(&cfg.db, "db", "tasks.db", "the local replica (SQLite)")
	fs.StringVar(&views, "views", "open-tasks", "the views to replicate, comma separated")
	if err := fs.Parse(args); err != nil {
		return config{}, nil, err
	}
	cfg.views = strings.Split(views, ",")
	if fs.NArg() == 0 {
		return config{}, nil, errors.New(usage)
	}
	return cfg, fs.Args(), nil
}

// run runs one command of the app.
func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, cmd, err := parseFlags(args, out)
	if err != nil {
		return err
	}
	st, err := viewclient.OpenSQLite(ctx, cfg.db)
	if err != nil {
		return err
	}
	defer st.Close()
	a := &app{cfg: cfg, mv: viewclient.New(st), out: out}
	switch {
	case cmd[0] == "add" && (len(cmd) == 2 || len(cmd) == 3):
		project := ""
		if len(cmd) == 3 {
			project = cmd[2]
		}
		return a.add(ctx, cmd[1], project)
	case cmd[0] == "done" && len(cmd) == 2:
		return a.done(ctx, cmd[1])
	case cmd[0] == "rm" && len(cmd) == 2:
		return a.remove(ctx, cmd[1])
	case cmd[0] == "list" && len(cmd) == 1:
		return a.list(ctx)
	case cmd[0] == "sync" && len(cmd) == 1:
		return a.sync(ctx)
	}
	return errors.New(usage)
}
