// Command pusher is the push crash test's victim. It opens a store and
// pushes one entity per ordinal for several clients through
// changelog.Log, printing "sent <client> <ordinal>" before each push and
// "ack <client> <ordinal> <seq>" after its answer. After -stall-after
// committed groups, the commit hook prints "stalled" and blocks: the
// group is committed but never answered, and the test kills the process
// with SIGKILL right there.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/postgres"
	"github.com/eddy-run/eddy/store/sqlite"
)

func main() {
	driver := flag.String("driver", "sqlite", "sqlite or postgres")
	dsn := flag.String("dsn", "", "SQLite file path or PostgreSQL URL")
	clients := flag.Int("clients", 4, "concurrent push clients")
	stallAfter := flag.Int64("stall-after", 50, "committed groups before the commit hook stalls")
	flag.Parse()
	if err := run(context.Background(), *driver, *dsn, *clients, *stallAfter); err != nil {
		fmt.Fprintln(os.Stderr, "pusher:", err)
		os.Exit(1)
	}
}

// out serializes the lines the test reads.
var out sync.Mutex

func say(format string, args ...any) {
	out.Lock()
	defer out.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

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
	return st, st.Migrate(ctx)
}

func run(ctx context.Context, driver, dsn string, clients int, stallAfter int64) error {
	st, err := open(ctx, driver, dsn)
	if err != nil {
		return err
	}
	var groups atomic.Int64
	stall := make(chan struct{}) // never closed
	log := changelog.New(st, changelog.Options{OnCommit: func(string, int64) {
		if groups.Add(1) == stallAfter {
			say("stalled")
			<-stall
		}
	}})
	if _, err := log.EnsureSpace(ctx, "s"); err != nil {
		return err
	}
	errs := make(chan error, clients)
	for c := range clients {
		go func() { errs <- loop(ctx, log, fmt.Sprintf("c%d", c)) }()
	}
	return <-errs
}

// loop pushes ordinals 1, 2, ... of one client, each after the previous
// one was answered.
func loop(ctx context.Context, log *changelog.Log, client string) error {
	for o := int64(1); ; o++ {
		say("sent %s %d", client, o)
		res, err := log.Write(ctx, changelog.WriteRequest{Space: "s", Provenance: store.Provenance{Actor: client},
			Push: &changelog.Push{ClientID: client, Owner: "tok", Ordinals: []int64{o}},
			Mutations: []changelog.Mutation{{Op: changelog.OpPut, Type: "item", EntityID: fmt.Sprintf("%s-%d", client, o),
				Properties: fmt.Appendf(nil, `{"o":%d}`, o)}}})
		if err != nil {
			return fmt.Errorf("%s ordinal %d: %w", client, o, err)
		}
		if res.Push.LastOrdinal != o || res.Receipts[0].Status != store.ReceiptApplied {
			return fmt.Errorf("%s ordinal %d: %+v %+v", client, o, res.Push, res.Receipts[0])
		}
		say("ack %s %d %d", client, o, res.Receipts[0].Seq)
	}
}
