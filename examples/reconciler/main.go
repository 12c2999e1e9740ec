// Command reconciler keeps a copy of one eddy collection in an external
// system (here a SQLite file) with the public Go client: it lists the
// collection, watches it from the list's head, applies every row
// idempotently, saves its position in the same transaction, continues
// from that position after a restart, and lists again when the position
// was pruned (compacted). See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/eddy-run/eddy/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconciler:", err)
		os.Exit(1)
	}
}

// config is what the flags set.
type config struct {
	server, token, space, typ, db string
	page                          int
}

// parseFlags reads the flags; the server and token default to the eddy
// CLI's (EDDY_SERVER, EDDY_TOKEN, ./eddy-data/admin.token).
func parseFlags(args []string, stderr io.Writer) (config, error) {
	server, token := client.Env()
	var cfg config
	fs := flag.NewFlagSet("reconciler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.server, "server", server, "eddy's address (EDDY_SERVER)")
	fs.StringVar(&cfg.token, "token", token, "a token that may read the collection (EDDY_TOKEN, else ./eddy-data/admin.token)")
	fs.StringVar(&cfg.space, "space", "default", "the space")
	fs.StringVar(&cfg.typ, "type", "task", "the collection (entity type) to reconcile")
	fs.StringVar(&cfg.db, "db", "reconciled.db", "the external system: a SQLite file")
	fs.IntVar(&cfg.page, "page", 100, "list page size")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.token == "" {
		return config{}, errors.New("no token: pass --token or set EDDY_TOKEN")
	}
	return cfg, nil
}

// run reconciles until ctx ends (then it returns nil) or fails.
func run(ctx context.Context, args []string, logw io.Writer) error {
	cfg, err := parseFlags(args, logw)
	if err != nil {
		return err
	}
	c, err := client.New(cfg.server, client.Options{Token: cfg.token})
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	ext, err := openExternal(ctx, cfg.db)
	if err != nil {
		return err
	}
	defer ext.Close()
	r := &reconciler{sp: c.Space(cfg.space), typ: cfg.typ, ext: ext, log: log.New(logw, "", log.LstdFlags), page: cfg.page}
	r.opts = watchOptions
	err = r.run(ctx)
	if ctx.Err() != nil {
		r.log.Printf("stopped")
		return nil
	}
	return err
}

// watchOptions tune the watch (tests shorten the backoff).
var watchOptions = client.WatchOptions{}
