package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/server"
)

// exampleServer runs a fresh eddy on embedded SQLite for one example and
// returns its address and an admin token. In an application, the
// address is where `eddy serve` listens and the token is yours.
func exampleServer() (addr, token string, stop func()) {
	dir, err := os.MkdirTemp("", "eddy-example-")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	e, err := eddy.Open(ctx, eddy.Config{DataDir: dir, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	_, token, err = e.Auth().Create(ctx, auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin, Actor: "owner"})
	if err != nil {
		log.Fatal(err)
	}
	cfg := e.ServerConfig()
	cfg.Logger = quiet
	api, err := server.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	return srv.URL, token, func() {
		_ = e.Close()
		srv.Close()
		_ = os.RemoveAll(dir)
	}
}

// exampleSpace is exampleServer with a client of it (built as Example
// shows) and the handle of its space "default".
func exampleSpace() (*client.Space, func()) {
	addr, token, stop := exampleServer()
	c, err := client.New(addr, client.Options{Token: token})
	if err != nil {
		log.Fatal(err)
	}
	return c.Space("default"), func() {
		c.CloseIdleConnections()
		stop()
	}
}

// Write an entity, change it only if nobody else did, and read it back.
func Example() {
	addr, token, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	c, err := client.New(addr, client.Options{Token: token})
	if err != nil {
		log.Fatal(err)
	}
	defer c.CloseIdleConnections()
	tasks := c.Space("default")

	put, err := tasks.Put(ctx, "task", "t1", map[string]any{"title": "write the docs", "status": "open"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", put.Created, "seq:", put.Seq)

	// Only if it is still at the version we read.
	_, err = tasks.Patch(ctx, "task", "t1", map[string]any{"status": "done"},
		client.WriteOptions{IfMatch: client.Version(put.Entity.Version)})
	if err != nil {
		log.Fatal(err)
	}
	rec, err := tasks.Get(ctx, "task", "t1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.Type, rec.ID, "version", rec.Version, string(rec.Properties))
	// Output:
	// created: true seq: 1
	// task t1 version 2 {"status":"done","title":"write the docs"}
}

// A rejected write is an *Error with the problem's code; a rejection of a
// mutation also carries its receipt.
func ExampleIsCode() {
	sp, stop := exampleSpace()
	defer stop()
	ctx := context.Background()

	_, _ = sp.Put(ctx, "task", "t1", map[string]any{"title": "x"})
	_, err := sp.Patch(ctx, "task", "t1", map[string]any{"title": "y"}, client.WriteOptions{IfMatch: client.Version(7)})
	switch {
	case client.IsCode(err, "precondition_failed"):
		var e *client.Error
		errors.As(err, &e)
		rc, _ := e.Receipt()
		fmt.Println(e.Status, e.Code, rc.Status)
	case err != nil:
		log.Fatal(err)
	}
	_, err = sp.Get(ctx, "task", "nope")
	fmt.Println(client.CodeOf(err))
	// Output:
	// 412 precondition_failed rejected
	// not_found
}

// List a collection, then watch it from the list's head: nothing is
// missed between the two and nothing is seen twice.
func ExampleSpace_Watch() {
	sp, stop := exampleSpace()
	defer stop()
	ctx := context.Background()
	_, _ = sp.Put(ctx, "task", "a", map[string]any{"title": "A"})
	_, _ = sp.Put(ctx, "task", "b", map[string]any{"title": "B"})

	var head int64
	for page, err := range sp.ListPages(ctx, "task", 100) {
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range page.Items {
			fmt.Println("listed", r.ID)
		}
		head = page.Head
	}

	w, err := sp.Watch(ctx, client.WatchOptions{From: head, Type: "task"})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	_, _ = sp.Patch(ctx, "task", "a", map[string]any{"status": "done"})
	for {
		ev, err := w.Next() // resumes by itself after drops
		if err != nil {
			log.Fatal(err) // ctx ended, Close, or a *CompactedError: re-list
		}
		if ev.Kind != client.EventRow {
			continue // the opening bookmark, progress, heartbeats
		}
		fmt.Println("watched", ev.Row.Seq, ev.Row.Op, ev.Row.EntityID, string(ev.Row.Payload))
		break // save ev.Position to resume from it later
	}
	// Output:
	// listed a
	// listed b
	// watched 3 patch a {"properties":["status"]}
}

// Page the history backward, newest first, with filters and a CEL when.
func ExampleSpace_HistoryPages() {
	sp, stop := exampleSpace()
	defer stop()
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		_, _ = sp.Put(ctx, "task", id, map[string]any{})
		_, _ = sp.Delete(ctx, "task", id)
	}

	p := client.HistoryParams{Limit: 2, Filter: client.Filter{Types: []string{"task"}, When: `row.op == "delete"`}}
	for page, err := range sp.HistoryPages(ctx, p) {
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range page.Changes {
			fmt.Println(r.Seq, r.Op, r.EntityID)
		}
	}
	// Output:
	// 6 delete c
	// 4 delete b
	// 2 delete a
}

// A batch of mutations answers one receipt per mutation, rejected ones
// included.
func ExampleSpace_Mutate() {
	sp, stop := exampleSpace()
	defer stop()
	ctx := context.Background()

	res, err := sp.Mutate(ctx, client.Batch{Mutations: []client.Mutation{
		{MutationID: "m-1", Op: client.OpPut, Type: "task", EntityID: "t1", Properties: json.RawMessage(`{"title":"x"}`)},
		{Op: client.OpLink, Type: "task", EntityID: "t1", Rel: "assignee", Target: &client.EntityKey{Type: "user", ID: "u1"}},
		{Op: client.OpDelete, Type: "task", EntityID: "nope"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	for _, rc := range res.Receipts {
		if rc.Reason != nil {
			fmt.Println(rc.Status, rc.Reason.Code)
			continue
		}
		fmt.Println(rc.Status, rc.Seq)
	}
	// Output:
	// applied 1
	// applied 2
	// rejected not_found
}

// A watch position below the horizon is a *CompactedError: re-list and
// watch from the fresh head.
func ExampleCompactedError() {
	sp, stop := exampleSpace()
	defer stop()
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		_, _ = sp.Put(ctx, "task", id, map[string]any{})
	}
	_, _ = sp.Prune(ctx, client.PruneParams{Through: 2})

	_, err := sp.Watch(ctx, client.WatchOptions{From: 1})
	var ce *client.CompactedError
	if errors.As(err, &ce) {
		fmt.Println("compacted: from", ce.From, "horizon", ce.Horizon)
		page, _ := sp.List(ctx, "task", client.ListParams{})
		fmt.Println("re-listed", len(page.Items), "tasks at head", page.Head)
	}
	// Output:
	// compacted: from 1 horizon 2
	// re-listed 3 tasks at head 3
}
