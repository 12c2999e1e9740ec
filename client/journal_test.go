package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/store"
)

// TestJournal runs the client loop: a session, its initial fetch, the
// journal followed until a later write arrives, the state check, and a
// refused cursor.
func TestJournal(t *testing.T) {
	forEachDriver(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		if _, err := e.sp.Put(ctx, "note", "n1", map[string]any{"a": 1}); err != nil {
			t.Fatal(err)
		}
		_, secret := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, User: "u1", Application: "app"})
		sp := e.client(secret, nil).Space("default")
		caps, err := sp.JournalCapabilities(ctx)
		if err != nil || caps.PageLimit != 500 || caps.SafeWindowSeconds <= 0 {
			t.Fatalf("capabilities %+v %v", caps, err)
		}
		ses, err := sp.JournalSession(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fetch, err := sp.JournalFetch(ctx, ses.FetchToken, "", 0)
		if err != nil || fetch.Next != nil {
			t.Fatalf("fetch %+v %v", fetch, err)
		}
		if _, err := e.sp.Put(ctx, "note", "n2", map[string]any{"b": 2}); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, f := range fetch.Records {
			seen[f.ID] = true
		}
		fctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		errDone := errors.New("done")
		last, err := sp.JournalFollow(fctx, ses.Cursor, 0, 10*time.Millisecond, func(p client.JournalPage) error {
			for _, r := range p.Records {
				seen[r.ID] = true
			}
			if seen["n1"] && seen["n2"] {
				return errDone
			}
			return nil
		})
		if !errors.Is(err, errDone) || last == "" {
			t.Fatalf("follow: %v (seen %v)", err, seen)
		}
		res, err := sp.JournalState(ctx, []store.EntityKey{{Type: "note", ID: "n2"}, {Type: "note", ID: "zz"}})
		if err != nil || len(res) != 2 || res[0].State != "present" || res[1].State != "gone" {
			t.Fatalf("state %+v %v", res, err)
		}
		_, err = sp.Journal(ctx, ses.Cursor[:len(ses.Cursor)-2], 0)
		if !client.CursorRefused(err) || !client.IsCode(err, client.CodeCursorInvalid) {
			t.Fatalf("damaged cursor: %v", err)
		}
	})
}
