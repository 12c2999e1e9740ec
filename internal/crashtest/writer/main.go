// Command writer is the crash test's victim. It opens a store (SQLite file
// or PostgreSQL URL), writes entities through changelog.Log from several
// goroutines forever, and prints "ack <seq>" for each applied commit only
// after Write returned it. The crash test kills it with SIGKILL mid-stream.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/sqlite"
)

func main() {
	driver := flag.String("driver", "sqlite", "sqlite or postgres")
	dsn := flag.String("dsn", "", "SQLite file path or PostgreSQL URL")
	space := flag.String("space", "s", "space to write to")
	workers := flag.Int("workers", 4, "concurrent writers")
	round := flag.Int("round", 1, "round number, part of every value written")
	flag.Parse()
	if err := run(context.Background(), *driver, *dsn, *space, *workers, *round); err != nil {
		fmt.Fprintln(os.Stderr, "writer:", err)
		os.Exit(1)
	}
}

// open opens and migrates the named driver.
func open(ctx context.Context, driver, dsn string) (store.Store, error) {
	var st store.Store
	var err error
	switch driver {
	case "sqlite":
		st, err = sqlite.Open(ctx, dsn)
	case "postgres":
		st, err = postgres.Open(ctx, dsn)
	default:
		return nil, fmt.Errorf("unknown driver %q", driver)
	}
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// run writes until the process is killed or a write fails.
func run(ctx context.Context, driver, dsn, space string, workers, round int) error {
	st, err := open(ctx, driver, dsn)
	if err != nil {
		return err
	}
	log := changelog.New(st, changelog.Options{})
	if _, err := log.EnsureSpace(ctx, space); err != nil {
		return err
	}
	var mu sync.Mutex
	errs := make(chan error, workers)
	for w := range workers {
		go func() { errs <- loop(ctx, log, space, w, round, &mu) }()
	}
	return <-errs
}

// mutation is worker w's i-th mutation: put a, put b, merge b into a, so
// commits of one and of two changes interleave.
func mutation(w, i, round int) changelog.Mutation {
	a, b := fmt.Sprintf("w%d-a", w), fmt.Sprintf("w%d-b", w)
	switch i % 3 {
	case 0:
		return changelog.Mutation{Op: changelog.OpPut, Type: "item", EntityID: a,
			Properties: fmt.Appendf(nil, `{"n":%d,"r":%d,"w":%d}`, i, round, w)}
	case 1:
		return changelog.Mutation{Op: changelog.OpPut, Type: "item", EntityID: b,
			Properties: fmt.Appendf(nil, `{"m":%d,"n":%d,"r":%d}`, i, i, round)}
	default:
		return changelog.Mutation{Op: changelog.OpMerge, Type: "item", EntityID: a,
			From: &store.EntityKey{Type: "item", ID: b}}
	}
}

// loop is one worker: write, then acknowledge what was applied.
func loop(ctx context.Context, log *changelog.Log, space string, w, round int, mu *sync.Mutex) error {
	for i := 0; ; i++ {
		res, err := log.Write(ctx, changelog.WriteRequest{Space: space,
			Provenance: store.Provenance{Actor: fmt.Sprintf("writer-%d", w), Via: "api"},
			Mutations:  []changelog.Mutation{mutation(w, i, round)}})
		if err != nil {
			return fmt.Errorf("worker %d write %d: %w", w, i, err)
		}
		for _, r := range res.Receipts {
			if r.Status != store.ReceiptApplied {
				return fmt.Errorf("worker %d write %d: receipt %s (%v)", w, i, r.Status, r.Reason)
			}
			mu.Lock()
			_, err := fmt.Fprintf(os.Stdout, "ack %d\n", r.Seq)
			mu.Unlock()
			if err != nil {
				return err
			}
		}
	}
}
