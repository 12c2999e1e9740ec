package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	api "github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/internal/eddytest"
	"github.com/eddy-run/eddy/views"
	viewclient "github.com/eddy-run/eddy/views/client"
)

func TestFollowAppliesLivePagesAndResets(t *testing.T) {
	forEachState(t, func(t *testing.T, mv *viewclient.MultiViewClient) {
		srv := eddytest.New(t, eddytest.SQLite)
		c, err := api.New(srv.URL, api.Options{Token: srv.Admin})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.CloseIdleConnections)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sp := c.Space("default")
		v := sp.View("alpha")
		def := func(version, project string) {
			if _, _, err := v.Put(ctx, map[string]any{"version": version, "types": []string{"task"},
				"filter": map[string]any{"fieldEquals": map[string]any{"field": "project", "expected": project}}}); err != nil {
				t.Fatal(err)
			}
		}
		def("v1", "alpha")
		events := make(chan viewclient.SyncEvent, 100)
		fctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- mv.Follow(fctx, v, viewclient.SyncOptions{OnEvent: func(ev viewclient.SyncEvent) { events <- ev }})
		}()
		wait := func(what string, ok func(viewclient.SyncEvent) bool) {
			t.Helper()
			for {
				select {
				case ev := <-events:
					if ok(ev) {
						return
					}
				case <-ctx.Done():
					t.Fatalf("no %s", what)
				}
			}
		}
		wait("bootstrap", func(ev viewclient.SyncEvent) bool { return ev.Kind == viewclient.EventBootstrapped })
		if _, err := sp.Put(ctx, "task", "t1", map[string]any{"project": "alpha"}); err != nil {
			t.Fatal(err)
		}
		wait("live page", func(ev viewclient.SyncEvent) bool { return ev.Kind == viewclient.EventDelta && ev.Applied.Upserts == 1 })
		if version(t, mv, "default", "t1") == 0 {
			t.Fatal("t1 not replicated")
		}
		def("v2", "beta")
		wait("reset", func(ev viewclient.SyncEvent) bool {
			return ev.Kind == viewclient.EventReset && ev.Reason == views.ViewChanged
		})
		wait("second bootstrap", func(ev viewclient.SyncEvent) bool { return ev.Kind == viewclient.EventBootstrapped })
		if version(t, mv, "default", "t1") != 0 {
			t.Fatal("t1 kept after the view stopped selecting it")
		}
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("follow ended with %v", err)
		}
	})
}
