package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/eddy-run/eddy/changelog"
	api "github.com/eddy-run/eddy/client"
	viewclient "github.com/eddy-run/eddy/views/client"
)

// app is the task list over one local replica.
type app struct {
	cfg config
	mv  *viewclient.MultiViewClient
	out io.Writer
}

// task is what the app keeps of a task.
type task struct {
	Title   string `json:"title"`
	Project string `json:"project,omitempty"`
	Done    bool   `json:"done"`
}

// newID returns a fresh task id, made on the device (no server needed).
func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "t-" + hex.EncodeToString(b[:])
}

// add queues the creation of a task.
func (a *app) add(ctx context.Context, title, project string) error {
	props, err := json.Marshal(task{Title: title, Project: project})
	if err != nil {
		return err
	}
	id := newID()
	p, err := a.mv.Write(ctx, a.cfg.space, changelog.Mutation{Op: changelog.OpPut, Type: "task", EntityID: id, Properties: props})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.out, "added %s (pending, ordinal %d)\n", id, p.Ordinal)
	return nil
}

// done queues marking a task done.
func (a *app) done(ctx context.Context, id string) error {
	p, err := a.mv.Write(ctx, a.cfg.space, changelog.Mutation{Op: changelog.OpPatch, Type: "task", EntityID: id, Patch: []byte(`{"done":true}`)})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.out, "%s marked done (pending, ordinal %d)\n", id, p.Ordinal)
	return nil
}

// remove queues deleting a task.
func (a *app) remove(ctx context.Context, id string) error {
	p, err := a.mv.Write(ctx, a.cfg.space, changelog.Mutation{Op: changelog.OpDelete, Type: "task", EntityID: id})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.out, "%s removed (pending, ordinal %d)\n", id, p.Ordinal)
	return nil
}

// list prints the optimistic view: the replica plus the pending writes.
func (a *app) list(ctx context.Context) error {
	ts, err := a.mv.List(ctx, a.cfg.space, "task")
	if err != nil {
		return err
	}
	for _, o := range ts {
		var t task
		if err := json.Unmarshal(o.Record.Properties, &t); err != nil {
			return err
		}
		box := "[ ]"
		if t.Done {
			box = "[x]"
		}
		line := fmt.Sprintf("%s %-10s %s", box, o.Record.ID, t.Title)
		if t.Project != "" {
			line += "  #" + t.Project
		}
		if o.Pending {
			line += "  (pending)"
		}
		fmt.Fprintln(a.out, line)
	}
	ps, err := a.mv.Pending(ctx, a.cfg.space)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.out, "%d task(s), %d write(s) not yet acknowledged by the server\n", len(ts), len(ps))
	return nil
}

// sync pushes the pending writes, then brings every view to the head:
// the acks in the delta pages drop the writes whose canonical result
// arrived.
func (a *app) sync(ctx context.Context) error {
	c, err := api.New(a.cfg.server, api.Options{Token: a.cfg.token, MaxRetries: -1})
	if err != nil {
		return err
	}
	defer c.CloseIdleConnections()
	sp := c.Space(a.cfg.space)
	rep, err := a.mv.Push(ctx, a.cfg.space, sp)
	if err != nil {
		ps, _ := a.mv.Pending(ctx, a.cfg.space)
		return fmt.Errorf("%w\nthe server is out of reach or refused the push; your %d write(s) stay queued, sync again later", err, len(ps))
	}
	if rep.Sent > 0 {
		fmt.Fprintf(a.out, "pushed %d write(s), the server has them through ordinal %d\n", rep.Sent, rep.LastOrdinal)
	}
	for _, r := range rep.Rejected {
		why := "rejected"
		if r.Receipt.Reason != nil {
			why = r.Receipt.Reason.Message
		}
		fmt.Fprintf(a.out, "the server refused %s %s: %s (dropped)\n", r.Pending.Mutation.Op, r.Pending.Mutation.EntityID, why)
	}
	o := viewclient.SyncOptions{OnEvent: func(ev viewclient.SyncEvent) { a.event(ev) }}
	for _, v := range a.cfg.views {
		if _, err := a.mv.Sync(ctx, sp.View(v), o); err != nil {
			var e *api.Error
			if errors.As(err, &e) && e.Code == "not_found" {
				return fmt.Errorf("view %s does not exist on the server (see README: eddy apply -f views.yaml): %w", v, err)
			}
			return fmt.Errorf("sync %s: %w", v, err)
		}
	}
	ps, err := a.mv.Pending(ctx, a.cfg.space)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.out, "in sync; %d write(s) still waiting for their acknowledgement\n", len(ps))
	return nil
}

// event says what a sync step did.
func (a *app) event(ev viewclient.SyncEvent) {
	switch ev.Kind {
	case viewclient.EventBootstrapped:
		fmt.Fprintf(a.out, "view %s: bootstrapped %d task(s)\n", ev.View, ev.Records)
	case viewclient.EventReset:
		what := "dropped its local state, keeping what is known of versions and deletes"
		if ev.SpaceDiscarded {
			what = "the space's history changed: discarded the whole replica (queued writes kept)"
		}
		fmt.Fprintf(a.out, "view %s: reset (%s): %s; bootstrapping again\n", ev.View, ev.Reason, what)
	case viewclient.EventDelta:
		d := ev.Applied
		if !d.Duplicate && d.Upserts+d.Removals+d.Deletes+d.Acked > 0 {
			fmt.Fprintf(a.out, "view %s: %d changed, %d left the view, %d deleted, %d write(s) acknowledged\n", ev.View, d.Upserts, d.Removals, d.Deletes, d.Acked)
		}
	}
}
