package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/eddy-run/eddy/client"
)

// reconciler keeps the external system in step with one collection of a
// space: list it, watch from the list's head, apply every row, save the
// position with what it applied; on restart, continue from the saved
// position; when that position was pruned (compacted), list again.
type reconciler struct {
	sp   *client.Space
	typ  string
	ext  *external
	log  *log.Logger
	page int                 // list page size
	opts client.WatchOptions // backoff and timeouts of the watch
}

// run reconciles until ctx ends or a failure is final.
func (r *reconciler) run(ctx context.Context) error {
	pos, ok, err := r.ext.cursor(ctx, r.sp.Name(), r.typ)
	if err != nil {
		return err
	}
	if ok {
		r.log.Printf("resuming %s from seq %d", r.typ, pos)
	} else if pos, err = r.relist(ctx); err != nil {
		return err
	}
	for {
		err := r.follow(ctx, pos)
		var ce *client.CompactedError
		if !errors.As(err, &ce) {
			return err
		}
		r.log.Printf("compacted: seq %d was pruned (history starts after %d); listing %s again", ce.From, ce.Horizon, r.typ)
		if pos, err = r.relist(ctx); err != nil {
			return err
		}
	}
}

// relist copies the whole collection as of one head, removes what the
// external system holds that the listing no longer has, and saves that
// head as the position. A listing whose head is pruned while it pages
// (compacted) starts over.
func (r *reconciler) relist(ctx context.Context) (int64, error) {
	for {
		head, err := r.listOnce(ctx)
		if !client.IsCode(err, "compacted") {
			return head, err
		}
		r.log.Printf("the listing's head was pruned while paging; listing again")
	}
}

// listOnce is one listing: pages are applied as they come without moving
// the position, so a crash mid-listing resumes from the old one (and is
// told compacted again); the sweep and the new position commit last.
func (r *reconciler) listOnce(ctx context.Context) (int64, error) {
	before, err := r.ext.live(ctx, r.typ)
	if err != nil {
		return 0, err
	}
	seen := map[string]bool{}
	var head int64
	for page, err := range r.sp.ListPages(ctx, r.typ, r.page) {
		if err != nil {
			return 0, err
		}
		changes := make([]change, len(page.Items))
		for i := range page.Items {
			rec := page.Items[i]
			changes[i] = change{Type: rec.Type, ID: rec.ID, Record: &rec}
			seen[rec.ID] = true
		}
		if _, err := r.ext.apply(ctx, r.sp.Name(), r.typ, -1, changes); err != nil {
			return 0, err
		}
		head = page.Head
	}
	var gone []change
	for id := range before {
		if !seen[id] {
			gone = append(gone, change{Type: r.typ, ID: id, Version: head})
		}
	}
	if _, err := r.ext.apply(ctx, r.sp.Name(), r.typ, head, gone); err != nil {
		return 0, err
	}
	r.log.Printf("listed %d %s at seq %d (%d gone)", len(seen), r.typ, head, len(gone))
	return head, nil
}

// follow watches the collection from pos and applies every row until
// the watch fails for good.
func (r *reconciler) follow(ctx context.Context, pos int64) error {
	o := r.opts
	o.From, o.Type = pos, r.typ
	o.OnDrop = func(d client.Drop) {
		r.log.Printf("connection lost (%v); resuming from seq %d in %v", d.Err, d.From, d.Wait.Round(time.Millisecond))
	}
	w, err := r.sp.Watch(ctx, o)
	if err != nil {
		return err
	}
	defer w.Close()
	r.log.Printf("watching %s from seq %d", r.typ, pos)
	for {
		ev, err := w.Next()
		if err != nil {
			return err
		}
		switch ev.Kind {
		case client.EventRow:
			err = r.retry(ctx, fmt.Sprintf("apply seq %d", ev.Row.Seq), func() error { return r.applyRow(ctx, ev.Row) })
		case client.EventBookmark:
			_, err = r.ext.apply(ctx, r.sp.Name(), r.typ, ev.Position, nil)
		}
		if err != nil {
			return err
		}
	}
}

// applyRow applies one row: the row names what changed, the entity is
// one read away. A merge or split also touches a second entity, named in
// the payload.
func (r *reconciler) applyRow(ctx context.Context, row client.Row) error {
	keys := []string{row.EntityID}
	var p struct {
		Merged *client.EntityKey `json:"merged"`
		Into   *client.EntityKey `json:"into"`
	}
	if err := json.Unmarshal(row.Payload, &p); err != nil {
		return fmt.Errorf("row %d: payload: %w", row.Seq, err)
	}
	for _, k := range []*client.EntityKey{p.Merged, p.Into} {
		if k != nil && k.Type == r.typ {
			keys = append(keys, k.ID)
		}
	}
	changes := make([]change, 0, len(keys))
	for _, id := range keys {
		c, err := r.read(ctx, id, row.Seq)
		if err != nil {
			return err
		}
		changes = append(changes, c)
	}
	n, err := r.ext.apply(ctx, r.sp.Name(), r.typ, row.Seq, changes)
	if err != nil {
		return err
	}
	r.log.Printf("seq %d: %s %s/%s (%d changed)", row.Seq, row.Op, r.typ, row.EntityID, n)
	return nil
}

// read returns the change of entity id as of now: its record, or its
// absence at seq.
func (r *reconciler) read(ctx context.Context, id string, seq int64) (change, error) {
	rec, err := r.sp.Get(ctx, r.typ, id)
	switch {
	case err == nil:
		return change{Type: r.typ, ID: id, Record: &rec}, nil
	case client.IsCode(err, "not_found"):
		return change{Type: r.typ, ID: id, Version: seq}, nil
	default:
		return change{}, fmt.Errorf("read %s/%s: %w", r.typ, id, err)
	}
}

// retry runs f until it succeeds, fails for good or ctx ends, backing
// off between attempts: a read that fails while eddy restarts is tried
// again rather than ending the reconciler.
func (r *reconciler) retry(ctx context.Context, what string, f func() error) error {
	wait := 100 * time.Millisecond
	for {
		err := f()
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		r.log.Printf("%s: %v; retrying in %v", what, err, wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// transient reports whether err may pass by itself: a network failure
// or a 5xx or 429 answer.
func transient(err error) bool {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Status >= 500 || e.Status == 429
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
