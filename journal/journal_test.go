package journal

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// TestPagesDescribeChanges: records come in commit order; objects carry
// the card as it stood in their commit; tombstones and access changes
// carry none; nothing of an entity is sent while the user cannot see it.
func TestPagesDescribeChanges(t *testing.T) {
	forEachDriver(t, Options{}, func(e *env) {
		t := e.t
		ses := e.session(alice())
		e.write(put("doc", "d1", `{"members":["alice"],"t":"a"}`))     // 1
		e.write(put("secret", "x", `{"t":"never"}`))                   // 2
		e.write(patch("doc", "d1", `{"t":"b"}`))                       // 3
		e.write(patch("doc", "d1", `{"members":["bob"]}`))             // 4: lost sight
		e.write(patch("doc", "d1", `{"t":"hidden-content"}`))          // 5
		e.write(patch("doc", "d1", `{"members":["alice"],"t":"c"}`))   // 6: gained sight
		e.write(put("note", "n1", `{"a":1}`), put("note", "n2", `{}`)) // 7, 8
		e.write(merge("note", "n1", "n2"))                             // 9
		e.write(del("doc", "d1"))                                      // 10
		e.write(put("doc", "d2", `{"members":["bob"]}`))               // 11
		e.write(del("doc", "d2"))                                      // 12: never seen
		e.settle()
		pages := e.readAll(alice(), ses.Cursor, 0)
		if len(pages) != 1 {
			t.Fatalf("%d pages, want 1", len(pages))
		}
		p := pages[0]
		want := []string{"object doc/d1@1", "object doc/d1@3", "access doc/d1@4", "access doc/d1@6", "object doc/d1@6",
			"object note/n1@7", "object note/n2@8", "object note/n1@9", "tombstone note/n2@9 merged", "tombstone doc/d1@10 deleted"}
		if got := kinds(p.Records); !slices.Equal(got, want) {
			t.Fatalf("records\n got %v\nwant %v", got, want)
		}
		if c := p.Records[1].Card; c.Version != 3 || string(c.Properties) != `{"members":["alice"],"t":"b"}` {
			t.Fatalf("card at 3 = %s", js(c))
		}
		if sc := p.Records[2].Scope; sc == nil || *sc != (store.EntityKey{Type: "doc", ID: "d1"}) {
			t.Fatalf("access scope = %v", sc)
		}
		body := js(p.Records) + js(p.Warnings) // not the cursor: random bytes may spell anything
		for _, leak := range []string{"hidden-content", "never", "d2", "provenance", "receipt", "conflictGroups"} {
			if strings.Contains(body, leak) {
				t.Fatalf("page leaks %q: %s", leak, body)
			}
		}
		if p.HasMore || p.SettledSeq != 12 || len(p.Warnings) != 0 {
			t.Fatalf("hasMore %v settledSeq %d warnings %v", p.HasMore, p.SettledSeq, p.Warnings)
		}
		r := newReplica(t)
		r.apply(p)
		if got, want := r.keys(), e.truth(alice()); !slices.Equal(got, want) {
			t.Fatalf("replica %v, truth %v", got, want)
		}
	})
}

// TestSamePageTwice: a cursor read again answers the same page, byte for
// byte, and applying it twice leaves the replica as once did.
func TestSamePageTwice(t *testing.T) {
	forEachDriver(t, Options{}, func(e *env) {
		t := e.t
		ses := e.session(alice())
		e.write(put("note", "n1", `{}`))
		e.write(put("doc", "d1", `{"members":["alice"]}`))
		e.write(patch("doc", "d1", `{"members":[]}`))
		e.write(del("note", "n1"))
		e.write(put("note", "n1", `{"again":true}`))
		e.settle()
		a, b := e.read(alice(), ses.Cursor, 0), e.read(alice(), ses.Cursor, 0)
		if js(a) != js(b) {
			t.Fatalf("same cursor, different pages:\n%s\n%s", js(a), js(b))
		}
		once, twice := newReplica(t), newReplica(t)
		once.apply(a)
		twice.apply(a)
		twice.apply(b)
		if !slices.Equal(once.keys(), twice.keys()) || !slices.Equal(once.keys(), e.truth(alice())) {
			t.Fatalf("once %v, twice %v, truth %v", once.keys(), twice.keys(), e.truth(alice()))
		}
	})
}

// TestLimitAndShortPages: limit bounds the records (warnings aside), a
// page stops inside a commit when it is full and the next one resumes
// there, and a page cut short by the scan budget over unreadable commits
// is not the end: only hasMore is.
func TestLimitAndShortPages(t *testing.T) {
	forEachDriver(t, Options{ScanBudget: 4, PageLimit: 3}, func(e *env) {
		t := e.t
		ses := e.session(alice())
		for i := range 9 {
			e.write(put("secret", "x"+string(rune('a'+i)), `{}`))
		}
		e.write(put("note", "n1", `{}`), put("note", "n2", `{}`)) // 10, 11
		e.write(merge("note", "n1", "n2"))                        // 12: two records
		e.settle()
		var got []string
		var sizes []int
		cur := ses.Cursor
		for {
			p := e.read(alice(), cur, 1)
			got = append(got, kinds(p.Records)...)
			sizes = append(sizes, len(p.Records))
			if len(p.Records) > 1 {
				t.Fatalf("page of %d records over limit 1", len(p.Records))
			}
			if !p.HasMore {
				break
			}
			cur = p.NextCursor
		}
		want := []string{"object note/n1@10", "object note/n2@11", "object note/n1@12", "tombstone note/n2@12 merged"}
		if !slices.Equal(got, want) {
			t.Fatalf("records %v, want %v", got, want)
		}
		if sizes[0] != 0 || sizes[1] != 0 {
			t.Fatalf("page sizes %v: want short pages over the unreadable commits first", sizes)
		}
		for _, n := range []int{-1, 4} {
			_, err := e.svc.Read(e.ctx, ReadParams{Space: "s", Client: alice(), Cursor: ses.Cursor, Limit: n})
			wantCode(t, err, problem.BadRequest)
		}
	})
}

// TestCursorBinding: a cursor is refused with cursor_invalid for another
// user, another application, another space, and when damaged; a missing
// one is bad_request.
func TestCursorBinding(t *testing.T) {
	forEachDriver(t, Options{}, func(e *env) {
		t := e.t
		ses := e.session(alice())
		e.write(put("note", "n1", `{}`))
		e.settle()
		bob := Client{User: "bob", Application: "mail", Reader: members{"bob"}}
		otherApp := Client{User: "alice", Application: "calendar", Reader: members{"alice"}}
		damaged := []byte(ses.Cursor)
		damaged[len(damaged)/2] ^= 1
		cases := []struct {
			name, space, cursor string
			c                   Client
		}{
			{"user", "s", ses.Cursor, bob},
			{"application", "s", ses.Cursor, otherApp},
			{"space", "other", ses.Cursor, alice()},
			{"damaged", "s", string(damaged), alice()},
			{"truncated", "s", ses.Cursor[:len(ses.Cursor)-3], alice()},
			{"fetch token", "s", ses.FetchToken, alice()},
			{"garbage", "s", "!!not base64!!", alice()},
		}
		for _, c := range cases {
			_, err := e.svc.Read(e.ctx, ReadParams{Space: c.space, Client: c.c, Cursor: c.cursor})
			if problem.CodeOf(err) != problem.CursorInvalid {
				t.Errorf("%s: err %v, want cursor_invalid", c.name, err)
			}
		}
		_, err := e.svc.Read(e.ctx, ReadParams{Space: "s", Client: alice()})
		wantCode(t, err, problem.BadRequest)
		_, err = e.svc.Read(e.ctx, ReadParams{Space: "s", Client: Client{Reader: members{}}, Cursor: ses.Cursor})
		wantCode(t, err, problem.Forbidden)
		if p := e.read(alice(), ses.Cursor, 0); len(p.Records) != 1 {
			t.Fatalf("the owner's read: %s", js(p))
		}
	})
}

// TestExpiry: cursorExpiresAt is the session's creation plus retention,
// every page carries it unchanged however fresh the position, and after
// it every position of the session is cursor_expired. A new session does
// not annul the old cursor.
func TestExpiry(t *testing.T) {
	forEachDriver(t, Options{Retention: time.Hour}, func(e *env) {
		t := e.t
		ses := e.session(alice())
		if want := start.Add(time.Hour); !ses.CursorExpiresAt.Equal(want) {
			t.Fatalf("cursorExpiresAt %v, want %v", ses.CursorExpiresAt, want)
		}
		cur := ses.Cursor
		for range 3 {
			e.clock.Advance(15 * time.Minute)
			e.write(put("note", "n", `{"at":"`+e.clock.Now().String()+`"}`))
			e.settle()
			p := e.read(alice(), cur, 0)
			if !p.CursorExpiresAt.Equal(ses.CursorExpiresAt) {
				t.Fatalf("page moved the expiry to %v", p.CursorExpiresAt)
			}
			cur = p.NextCursor
		}
		renewed := e.session(alice())
		if !renewed.CursorExpiresAt.After(ses.CursorExpiresAt) {
			t.Fatalf("renewed expiry %v", renewed.CursorExpiresAt)
		}
		if p := e.read(alice(), ses.Cursor, 0); len(p.Records) != 3 {
			t.Fatalf("the first session's cursor after renewing: %s", js(p))
		}
		e.clock.Advance(15 * time.Minute) // exactly at the expiry
		for _, c := range []string{ses.Cursor, cur} {
			_, err := e.svc.Read(e.ctx, ReadParams{Space: "s", Client: alice(), Cursor: c})
			wantCode(t, err, problem.CursorExpired)
		}
		_, err := e.svc.Fetch(e.ctx, FetchParams{Space: "s", Client: alice(), Token: ses.FetchToken})
		wantCode(t, err, problem.CursorExpired)
		if p := e.read(alice(), renewed.Cursor, 0); p.HasMore {
			t.Fatalf("renewed session: %s", js(p))
		}
	})
}

// TestSafeWindow: commits younger than the safe window are held back,
// settledSeq says how far is settled, and hasMore answers against it.
func TestSafeWindow(t *testing.T) {
	forEachDriver(t, Options{SafeWindow: 2 * time.Second}, func(e *env) {
		t := e.t
		ses := e.session(alice())
		e.write(put("note", "n1", `{}`)) // 1 at t0
		e.clock.Advance(time.Second)
		p := e.read(alice(), ses.Cursor, 0)
		if len(p.Records) != 0 || p.HasMore || p.SettledSeq != 0 || p.NextCursor != ses.Cursor {
			t.Fatalf("before the window: %s", js(p))
		}
		e.write(put("note", "n2", `{}`)) // 2 at t0+1s
		e.clock.Advance(time.Second)     // n1 is exactly a window old
		p = e.read(alice(), ses.Cursor, 0)
		if got := kinds(p.Records); !slices.Equal(got, []string{"object note/n1@1"}) || p.HasMore || p.SettledSeq != 1 {
			t.Fatalf("at the window: %s", js(p))
		}
		e.clock.Advance(time.Second)
		p = e.read(alice(), p.NextCursor, 0)
		if got := kinds(p.Records); !slices.Equal(got, []string{"object note/n2@2"}) || p.SettledSeq != 2 {
			t.Fatalf("later: %s", js(p))
		}
		if c := e.svc.Capabilities(); c.SafeWindowSeconds != 2 || c.JournalRetentionDays != 30 || c.PageLimit != DefaultPageLimit {
			t.Fatalf("capabilities %+v", c)
		}
	})
}

// TestRenewWhileCaughtUp: a client that reads to the end and creates a
// session straight away (or within a safe window) is handed a position at
// or behind its own: reading on from it repeats only records it has, and
// misses nothing after.
func TestRenewWhileCaughtUp(t *testing.T) {
	forEachDriver(t, Options{SafeWindow: 2 * time.Second}, func(e *env) {
		t := e.t
		ses := e.session(alice())
		seen := map[string]bool{}
		cur := ses.Cursor
		for i := range 6 {
			e.write(put("note", "n"+string(rune('a'+i)), `{}`))
			e.clock.Advance(700 * time.Millisecond)
		}
		for _, p := range e.readAll(alice(), cur, 2) {
			for _, k := range kinds(p.Records) {
				seen[k] = true
			}
			cur = p.NextCursor
		}
		e.clock.Advance(500 * time.Millisecond) // renew soon after
		renewed := e.session(alice())
		e.write(put("note", "late", `{}`))
		e.clock.Advance(10 * time.Second)
		var fromOld, fromNew []string
		for _, p := range e.readAll(alice(), cur, 0) {
			fromOld = append(fromOld, kinds(p.Records)...)
		}
		for _, p := range e.readAll(alice(), renewed.Cursor, 0) {
			for _, k := range kinds(p.Records) {
				if !seen[k] && !slices.Contains(fromOld, k) {
					t.Fatalf("renewed cursor hands %q, which the old one never did", k)
				}
				fromNew = append(fromNew, k)
			}
		}
		for _, k := range fromOld {
			if !slices.Contains(fromNew, k) {
				t.Fatalf("renewed cursor misses %q (old cursor: %v, renewed: %v)", k, fromOld, fromNew)
			}
		}
		if len(fromNew) <= len(fromOld) {
			t.Fatalf("want the renewed cursor behind the client's: old %v, new %v", fromOld, fromNew)
		}
	})
}

// TestSettledTailFarBack: the settled tail is found when many commits
// are younger than the safe window (the walk back from the head takes
// several steps).
func TestSettledTailFarBack(t *testing.T) {
	forEachDriver(t, Options{SafeWindow: 2 * time.Second}, func(e *env) {
		t := e.t
		batch := func(n int) {
			ms := make([]changelog.Mutation, n)
			for i := range ms {
				ms[i] = put("note", fmt.Sprintf("n%d", i), `{}`)
			}
			e.write(ms...)
		}
		batch(300)
		e.clock.Advance(time.Second)
		batch(700)
		sp, err := e.log.Space(e.ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(1500 * time.Millisecond)
		if got, err := e.svc.settled(e.ctx, sp, e.clock.Now()); err != nil || got != 300 {
			t.Fatalf("settled = %d, %v; want 300", got, err)
		}
		if got, _ := e.svc.seqAt(e.ctx, sp, start.Add(-time.Second)); got != 0 {
			t.Fatalf("before everything: %d", got)
		}
	})
}
