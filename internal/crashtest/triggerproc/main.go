// Command triggerproc is the process the trigger crash test kills: it
// opens eddy on a database with the trigger engine running (short lease
// and poll), registers the go handler "stamp" (which patches the task it
// is given, slowly enough that a SIGKILL lands mid-delivery) and prints
// "started <n>" for every delivery it starts, until it is killed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/engine"
	"github.com/eddy-run/eddy/functions"
)

func main() {
	dsn := flag.String("dsn", "", "database URL (postgres://... or sqlite:PATH)")
	data := flag.String("data", "", "data directory")
	owner := flag.String("owner", "", "lease owner name")
	flag.Parse()
	if err := start(*dsn, *data, *owner); err != nil {
		fmt.Fprintln(os.Stderr, "triggerproc:", err)
		os.Exit(1)
	}
	select {} // until killed
}

// start opens eddy with its engine running and registers the handler.
func start(dsn, data, owner string) error {
	ctx := context.Background()
	e, err := eddy.Open(ctx, eddy.Config{DataDir: data, DatabaseURL: dsn,
		Logger: slog.New(slog.DiscardHandler),
		Engine: engine.Options{Owner: owner, LeaseTTL: time.Second, Poll: 20 * time.Millisecond}})
	if err != nil {
		return err
	}
	var n atomic.Int64
	err = e.Functions().Register("stamp", func(ctx context.Context, in functions.Input) ([]changelog.Mutation, error) {
		fmt.Printf("started %d\n", n.Add(1))
		time.Sleep(2 * time.Millisecond)
		patch, _ := json.Marshal(map[string]any{"stamped": in.Row.Seq})
		return []changelog.Mutation{{Op: changelog.OpPatch, Type: "task", EntityID: in.Row.EntityID, Patch: patch}}, nil
	})
	return err
}
