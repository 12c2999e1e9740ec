package journal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// TestConcurrentWritersAndReader: writers commit while a reader pages
// across page boundaries (small limit, the clock moving); once everything
// has settled, the reader has seen every record the journal owes it
// exactly once, in commit order.
func TestConcurrentWritersAndReader(t *testing.T) {
	forEachDriver(t, Options{SafeWindow: 2 * time.Second}, func(e *env) {
		t := e.t
		const writers, each = 4, 25
		ses := e.session(alice())
		var wg sync.WaitGroup
		done, tick := make(chan struct{}), make(chan struct{})
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					<-tick // one write per read: the two interleave
					id := fmt.Sprintf("w%d-%d", w, i)
					members := `["alice"]`
					if i%3 == 0 {
						members = `["bob"]`
					}
					if _, err := e.tryWrite(put("doc", id, `{"members":`+members+`}`), patch("doc", id, `{"n":1}`)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		go func() { wg.Wait(); close(done) }()
		var got []string
		cur := ses.Cursor
		writing := true
		for writing {
			p := e.read(alice(), cur, 3)
			got = append(got, kinds(p.Records)...)
			cur = p.NextCursor
			e.clock.Advance(500 * time.Millisecond)
			select {
			case tick <- struct{}{}:
			case <-done:
				writing = false
			}
		}
		e.settle()
		for _, p := range e.readAll(alice(), cur, 3) {
			got = append(got, kinds(p.Records)...)
		}
		want := e.owed(alice())
		if len(want) != writers*16*2 { // 16 of each writer's 25 docs are alice's, two records each
			t.Fatalf("owed %d records", len(want))
		}
		if js(got) != js(want) {
			t.Fatalf("reader saw %d records, the journal owes %d:\n got %v\nwant %v", len(got), len(want), got, want)
		}
	})
}

// owed describes every commit of space s for c, in one pass.
func (e *env) owed(c Client) []string {
	e.t.Helper()
	sp, err := e.log.Space(e.ctx, "s")
	if err != nil {
		e.t.Fatal(err)
	}
	commits, err := e.st.Commits(e.ctx, store.CommitsParams{Space: "s", After: 0, Limit: int(sp.Head) + 1, NoReceipts: true})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for i := range commits {
		for _, en := range Describe(&commits[i], c.Reader) {
			if en.Record != nil {
				out = append(out, kinds([]Record{*en.Record})...)
			}
		}
	}
	return out
}

// TestAuthReader: the journal asks package auth's one rule (a type's
// access rule over entity and user, and the token's type allow-list).
func TestAuthReader(t *testing.T) {
	forEachDriver(t, Options{}, func(e *env) {
		t := e.t
		if _, err := e.log.PutType(e.ctx, "s", "doc", []byte(`{"access":{"read":"user in entity.properties.members"}}`)); err != nil {
			t.Fatal(err)
		}
		svc := auth.NewService(e.st)
		reader := func(p *auth.Principal) Client {
			r, err := svc.Reader(context.Background(), p, "s")
			if err != nil {
				t.Fatal(err)
			}
			return Client{User: p.User, Application: p.Application, Types: p.Types, Reader: r}
		}
		carol := reader(&auth.Principal{Space: "s", Role: auth.RoleReader, User: "carol", Application: "app"})
		notesOnly := reader(&auth.Principal{Space: "s", Role: auth.RoleReader, User: "carol", Application: "app", Types: []string{"note"}})
		ses := e.session(carol)
		e.write(put("doc", "d1", `{"members":["carol"]}`), put("doc", "d2", `{"members":["dan"]}`), put("note", "n1", `{}`))
		e.write(patch("doc", "d1", `{"members":["dan"]}`))
		e.settle()
		if got, want := kinds(e.read(carol, ses.Cursor, 0).Records), []string{"object doc/d1@1", "object note/n1@3", "access doc/d1@4"}; js(got) != js(want) {
			t.Fatalf("carol: %v, want %v", got, want)
		}
		// A cursor is bound to what the verdicts depend on: another
		// allow-list, or a changed access rule, refuses it (no commit
		// announces what moved), and a new session reads on.
		_, err := e.svc.Read(e.ctx, ReadParams{Space: "s", Client: notesOnly, Cursor: ses.Cursor})
		wantCode(t, err, problem.CursorExpired)
		if got := kinds(e.read(notesOnly, e.session(notesOnly).Cursor, 0).Records); js(got) != `["object note/n1@3"]` {
			t.Fatalf("carol with a note allow-list: %v", got)
		}
		if _, err := e.log.PutType(e.ctx, "s", "doc", []byte(`{"access":{"read":"true"}}`)); err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.Read(e.ctx, ReadParams{Space: "s", Client: reader(&auth.Principal{Space: "s", Role: auth.RoleReader, User: "carol", Application: "app"}), Cursor: ses.Cursor})
		var pe *problem.Error
		if !errors.As(err, &pe) || pe.Code != problem.CursorExpired || pe.Details["reason"] != "access_changed" {
			t.Fatalf("after an access rule change: %v", err)
		}
	})
}
