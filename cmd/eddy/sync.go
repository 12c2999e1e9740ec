package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	api "github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/views"
	viewclient "github.com/eddy-run/eddy/views/client"
)

// syncFlags are the options of eddy sync.
type syncFlags struct {
	db       string
	once     bool
	strategy string
	pageSize int
	budget   int
	noPush   bool
}

// syncCommand is eddy sync VIEW... --db local.db.
func (a *app) syncCommand() *cobra.Command {
	var f syncFlags
	cmd := &cobra.Command{
		Use:   "sync VIEW... --db local.db",
		Short: "Keep a local SQLite replica of views (bootstrap, then live delta)",
		Long: `Keeps a local SQLite replica of one or more views of the space: each view is
bootstrapped (with a progress line) unless the file already holds its cursor,
then followed live through its delta stream until interrupted. A second run
resumes from the stored cursors.

A view whose cursor no longer holds is reset as its reason calls for, and
the command says so: view_changed, schema_changed and the bootstrap reasons
drop that view's memberships (keeping what the replica knows of versions and
deletes) and bootstrap it again; epoch_changed, history_pruned and
cursor_ahead discard the space's whole replica first.

Writes an application queued in the file (views/client's Write) are pushed
first, unless --no-push. With --once the command stops at the head.`,
		Args: cobra.MinimumNArgs(1),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if err := a.refuseFormat("sync"); err != nil {
				return err
			}
			if f.db == "" {
				return usagef("--db is required: the SQLite file of the replica")
			}
			if f.strategy != api.Frozen && f.strategy != api.Keyset {
				return usagef("--strategy must be frozen or keyset")
			}
			return a.sync(cmd.Context(), args, f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.db, "db", "", "the replica's SQLite file (created if missing)")
	fl.BoolVar(&f.once, "once", false, "stop once every view is at the head instead of following live")
	fl.StringVar(&f.strategy, "strategy", api.Frozen, "bootstrap strategy: frozen or keyset")
	fl.IntVar(&f.pageSize, "page-size", 0, "bootstrap page size (default: the server's)")
	fl.IntVar(&f.budget, "budget", 0, "source commits per delta page (default: the server's)")
	fl.BoolVar(&f.noPush, "no-push", false, "do not push the writes queued in the file")
	return cmd
}

// sync runs eddy sync.
func (a *app) sync(ctx context.Context, names []string, f syncFlags) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cn, err := a.connect()
	if err != nil {
		return err
	}
	defer cn.CloseIdleConnections()
	st, err := viewclient.OpenSQLite(ctx, f.db)
	if err != nil {
		return err
	}
	defer st.Close()
	mv := viewclient.New(st)
	sp := cn.sp
	if !f.noPush {
		if err := a.pushPending(ctx, mv, sp); err != nil {
			return err
		}
	}
	rep := &syncReporter{a: a, p: &progress{w: a.stderr, live: isTerminal(a.stderr)}}
	o := viewclient.SyncOptions{PageSize: f.pageSize, Strategy: f.strategy, Budget: f.budget, OnEvent: rep.event}
	for _, name := range names {
		if _, err := mv.Sync(ctx, sp.View(name), o); err != nil {
			return fmt.Errorf("sync %s: %w", name, err)
		}
		rep.done(ctx, mv, name)
	}
	if f.once {
		return nil
	}
	fmt.Fprintf(a.stderr, "following %d view(s) live; Ctrl-C stops\n", len(names))
	return followAll(ctx, mv, sp, names, o)
}

// pushPending pushes the writes queued in the replica, saying what it did.
func (a *app) pushPending(ctx context.Context, mv *viewclient.MultiViewClient, sp *api.Space) error {
	ps, err := mv.Pending(ctx, sp.Name())
	if err != nil || len(ps) == 0 {
		return err
	}
	r, err := mv.Push(ctx, sp.Name(), sp)
	if err != nil {
		return fmt.Errorf("push %d queued write(s): %w", len(ps), err)
	}
	fmt.Fprintf(a.stderr, "pushed %d queued write(s) through ordinal %d", r.Sent, r.LastOrdinal)
	if len(r.Rejected) > 0 {
		fmt.Fprintf(a.stderr, "; %d rejected:", len(r.Rejected))
		for _, rw := range r.Rejected {
			why := ""
			if rw.Receipt.Reason != nil {
				why = rw.Receipt.Reason.Message
			}
			fmt.Fprintf(a.stderr, "\n  ordinal %d (%s %s/%s): %s", rw.Pending.Ordinal, rw.Pending.Mutation.Op, rw.Pending.Mutation.Type, rw.Pending.Mutation.EntityID, why)
		}
	}
	fmt.Fprintln(a.stderr)
	return nil
}

// followAll follows every view until ctx ends or one fails for good.
func followAll(ctx context.Context, mv *viewclient.MultiViewClient, sp *api.Space, names []string, o viewclient.SyncOptions) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			if err := mv.Follow(ctx, sp.View(name), o); err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("follow %s: %w", name, err))
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// syncReporter prints what a sync does: a progress line while a view
// bootstraps, and every reset with its reason.
type syncReporter struct {
	a  *app
	p  *progress
	mu sync.Mutex
}

func (r *syncReporter) event(ev viewclient.SyncEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Kind {
	case viewclient.EventBootstrapPage:
		r.p.show(fmt.Sprintf("bootstrap %s: %d records", ev.View, ev.Records))
	case viewclient.EventBootstrapped:
		r.p.show(fmt.Sprintf("bootstrap %s: %d records, done", ev.View, ev.Records))
		r.p.end()
	case viewclient.EventReset:
		r.p.end()
		fmt.Fprintf(r.a.stderr, "view %s: reset_required (%s): %s\n", ev.View, ev.Reason, resetAction(ev))
	case viewclient.EventReconnect:
		fmt.Fprintf(r.a.stderr, "view %s: stream ended (%v); reconnecting from the stored cursor\n", ev.View, ev.Err)
	case viewclient.EventDelta:
		a := ev.Applied
		if !a.Duplicate && a.Upserts+a.Removals+a.Deletes+a.Acked > 0 {
			fmt.Fprintf(r.a.stdout, "%s: %d upserted, %d left the view, %d deleted, %d write(s) acknowledged\n", ev.View, a.Upserts, a.Removals, a.Deletes, a.Acked)
		}
	}
}

// resetAction says what a reset did.
func resetAction(ev viewclient.SyncEvent) string {
	if ev.SpaceDiscarded {
		return "the space's history changed; discarded its whole local replica and bootstrapping again"
	}
	switch ev.Reason {
	case views.ViewChanged, views.SchemaChanged:
		return "the view's definition changed; dropped its memberships (keeping versions and deletes) and bootstrapping it again"
	}
	return "the bootstrap could not continue; dropped the view's partial state and bootstrapping it again"
}

// done prints a view's state after its sync.
func (r *syncReporter) done(ctx context.Context, mv *viewclient.MultiViewClient, name string) {
	recs, err := mv.Records(ctx, r.a.spaceName(), "")
	if err != nil {
		return
	}
	fmt.Fprintf(r.a.stderr, "view %s: at the head; the replica holds %d record(s) of space %s\n", name, len(recs), r.a.spaceName())
}
