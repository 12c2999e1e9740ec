package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/journal"
	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store/storetest"
	"github.com/eddy-run/eddy/watch"
)

// journalEnv is a server whose log and journal share a fake clock.
func journalEnv(t *testing.T, d driver) (*env, *storetest.Clock) {
	t.Helper()
	st := d.open(t)
	clock := storetest.NewClock(time.Date(2026, 8, 4, 12, 0, 0, 0, time.UTC))
	lg := changelog.New(st, changelog.Options{Now: clock.Now})
	t.Cleanup(func() { _ = lg.Close() })
	if _, err := lg.EnsureSpace(context.Background(), "default"); err != nil {
		t.Fatal(err)
	}
	as := auth.NewService(st)
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	hub := watch.New(lg, watch.Options{Logger: logger, Heartbeat: testHeartbeat})
	j := journal.New(lg, journal.Options{Now: clock.Now, Retention: time.Hour})
	srv := httptest.NewServer(newServer(t, Config{Log: lg, Auth: as, Hub: hub, Journal: j, Logger: logger, Version: "test"}).Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() { stopHub(t, hub) })
	e := &env{t: t, srv: srv, log: lg, auth: as, hub: hub}
	e.admin = e.token(auth.CreateParams{Space: auth.AllSpaces, Role: auth.RoleAdmin, Actor: "owner"})
	return e, clock
}

func forEachJournalDriver(t *testing.T, fn func(e *env, clock *storetest.Clock)) {
	t.Helper()
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			fn(journalEnv(t, d))
		})
	}
}

const jpath = "/api/v1/spaces/default/journal"

// TestJournalHTTP walks the client loop of DESIGN section 9 over HTTP:
// capabilities, a session made through a token created by the API, the
// initial fetch, pages to the settled end, the state check.
func TestJournalHTTP(t *testing.T) {
	t.Parallel()
	forEachJournalDriver(t, func(e *env, clock *storetest.Clock) {
		t := e.t
		e.call(t, http.MethodPut, "/api/v1/spaces/default/types/doc", `{"access":{"read":"user in entity.properties.members"}}`).want(http.StatusCreated)
		var tok struct{ Token string }
		e.call(t, http.MethodPost, "/api/v1/tokens", `{"space":"default","role":"reader","user":"u1","application":"mail-app"}`).want(http.StatusCreated).decode(&tok)
		u1 := tok.Token
		caps := e.do(t, req{Method: http.MethodGet, Path: jpath + "/capabilities", Token: u1}).want(http.StatusOK)
		if strings.TrimSpace(string(caps.body)) != `{"safeWindowSeconds":2,"journalRetentionDays":0.041666666666666664,"pageLimit":500}` {
			t.Fatalf("capabilities %s", caps.body)
		}
		e.call(t, http.MethodPut, "/api/v1/spaces/default/entities/doc/d1", `{"members":["u1"],"t":"a"}`).want(http.StatusCreated)
		e.call(t, http.MethodPut, "/api/v1/spaces/default/entities/doc/d2", `{"members":["u2"]}`).want(http.StatusCreated)
		clock.Advance(time.Minute)
		ses := e.do(t, req{Method: http.MethodPost, Path: jpath + "/sessions", Token: u1}).want(http.StatusOK).obj()
		if got := strings.Join(keys(ses), ","); got != "cursor,cursorExpiresAt,fetchToken,sessionId" {
			t.Fatalf("session keys %s", got)
		}
		fetch := e.do(t, req{Method: http.MethodGet, Path: jpath + "/fetch?token=" + url.QueryEscape(ses["fetchToken"].(string)), Token: u1}).want(http.StatusOK)
		if !strings.Contains(string(fetch.body), `"records":[{"kind":"object","type":"doc","id":"d1","card":{"type":"doc","id":"d1","version":1,`) ||
			!strings.HasSuffix(strings.TrimSpace(string(fetch.body)), `"next":null}`) || strings.Contains(string(fetch.body), "d2") {
			t.Fatalf("fetch %s", fetch.body)
		}
		e.do(t, req{Method: http.MethodPatch, Path: "/api/v1/spaces/default/entities/doc/d1", Token: e.admin, Body: `{"members":["u2"]}`,
			Header: map[string]string{"Content-Type": "application/merge-patch+json"}}).want(http.StatusOK)
		clock.Advance(3 * time.Second)
		page := e.do(t, req{Method: http.MethodGet, Path: jpath + "?limit=10&cursor=" + url.QueryEscape(ses["cursor"].(string)), Token: u1}).want(http.StatusOK)
		want := `{"records":[{"kind":"access","seq":3,"type":"doc","id":"d1","scope":{"type":"doc","id":"d1"}}],"nextCursor":`
		if !strings.HasPrefix(string(page.body), want) || !strings.Contains(string(page.body), `"hasMore":false,"settledSeq":3,"cursorExpiresAt":"2026-08-04T13:01:00Z","warnings":[]}`) {
			t.Fatalf("page %s", page.body)
		}
		var st struct {
			Results []map[string]any `json:"results"`
		}
		e.do(t, req{Method: http.MethodPost, Path: jpath + "/state", Token: u1, Body: `{"ids":[{"type":"doc","id":"d1"},{"type":"doc","id":"zz"}]}`}).want(http.StatusOK).decode(&st)
		if fmt.Sprint(st.Results) != "[map[id:d1 state:hidden type:doc] map[id:zz state:gone type:doc]]" {
			t.Fatalf("state %v", st.Results)
		}
	})
}

// TestJournalHTTPErrors: refused cursors are 409 cursor_invalid and
// cursor_expired; bad input is a problem and changes nothing; a token
// without a user is forbidden.
func TestJournalHTTPErrors(t *testing.T) {
	t.Parallel()
	forEachJournalDriver(t, func(e *env, clock *storetest.Clock) {
		t := e.t
		u1 := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, User: "u1", Application: "mail-app"})
		u1cal := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, User: "u1", Application: "calendar"})
		u2 := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader, User: "u2", Application: "mail-app"})
		plain := e.token(auth.CreateParams{Space: "default", Role: auth.RoleReader})
		var ses journal.Session
		e.do(t, req{Method: http.MethodPost, Path: jpath + "/sessions", Token: u1, Body: `{}`}).want(http.StatusOK).decode(&ses)
		cur := url.QueryEscape(ses.Cursor)
		for _, tok := range []string{u1cal, u2} {
			e.do(t, req{Method: http.MethodGet, Path: jpath + "?cursor=" + cur, Token: tok}).want(http.StatusConflict).problem(problem.CursorInvalid)
		}
		e.do(t, req{Method: http.MethodGet, Path: jpath + "?cursor=" + cur[:len(cur)-4], Token: u1}).want(http.StatusConflict).problem(problem.CursorInvalid)
		for _, path := range []string{jpath, jpath + "?cursor=" + cur + "&limit=0", jpath + "?cursor=" + cur + "&limit=501", jpath + "?cursor=" + cur + "&limit=x",
			jpath + "?cursor=" + cur + "&bogus=1", jpath + "/fetch", jpath + "/fetch?token=abc", jpath + "/capabilities?x=1"} {
			e.do(t, req{Method: http.MethodGet, Path: path, Token: u1}).want(http.StatusBadRequest).problem(problem.BadRequest)
		}
		many := strings.Repeat(`{"type":"doc","id":"d"},`, journal.MaxStateIDs) + `{"type":"doc","id":"d"}`
		for _, body := range []string{`{}`, `{"ids":[{"type":"Doc!","id":"x"}]}`, `{"ids":[` + many + `]}`, `{"ids":"x"}`, `{"ids":[],"x":1}`, `[`} {
			e.do(t, req{Method: http.MethodPost, Path: jpath + "/state", Token: u1, Body: body}).want(http.StatusBadRequest).problem(problem.BadRequest)
		}
		e.do(t, req{Method: http.MethodPost, Path: jpath + "/sessions", Token: plain}).want(http.StatusForbidden).problem(problem.Forbidden)
		e.do(t, req{Method: http.MethodPost, Path: "/api/v1/spaces/nope/journal/sessions", Token: e.admin}).want(http.StatusNotFound)
		clock.Advance(time.Hour)
		pe := e.do(t, req{Method: http.MethodGet, Path: jpath + "?cursor=" + cur, Token: u1}).want(http.StatusConflict).problem(problem.CursorExpired)
		if pe.Details["cursorExpiresAt"] == nil {
			t.Fatalf("expired without its moment: %+v", pe)
		}
	})
}
