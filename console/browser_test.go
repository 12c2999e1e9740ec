package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/eddy-run/eddy"
	"github.com/eddy-run/eddy/auth"
	"github.com/eddy-run/eddy/internal/eddytest"
)

// The browser tests run in headless Chromium (Debian's chromium). They
// are required (a missing browser fails them) when CI is set, as
// .ci/run sets it, or when EDDY_BROWSER_TESTS=1; otherwise a machine
// without Chromium skips them. EDDY_CHROMIUM names the browser binary.
// EDDY_CONSOLE_SCREENSHOTS=dir writes the screenshots there (make
// console-screenshots writes docs/console); otherwise they go to the
// test's artifact directory.

// stepTimeout bounds one wait on the page: generous, for a loaded 2-core
// machine.
const stepTimeout = 30 * time.Second

// browserRequired reports whether a missing browser fails the tests.
func browserRequired() bool {
	return os.Getenv("CI") != "" || os.Getenv("EDDY_BROWSER_TESTS") == "1"
}

// chromium returns the browser binary, failing or skipping t without one.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("EDDY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no Chromium found (install Debian's chromium, or set EDDY_CHROMIUM)"
	if browserRequired() {
		t.Fatal(msg + ": the browser tests are required here (CI or EDDY_BROWSER_TESTS=1)")
	}
	t.Skip(msg + "; set EDDY_BROWSER_TESTS=1 to make this a failure")
	return ""
}

// stack is one eddy with its server and one headless browser, shared by
// the subtests of a console test.
type stack struct {
	t       *testing.T
	srv     *eddytest.Server
	e       *eddy.Eddy
	admin   string
	browser context.Context
	shots   string
	batched int // entities written by batch
}

// newStack opens eddy on SQLite, serves it and starts the browser.
func newStack(t *testing.T) *stack {
	t.Helper()
	exe := chromium(t)
	srv := eddytest.New(t, eddytest.SQLite)
	s := &stack{t: t, srv: srv, e: srv.Eddy(), admin: srv.Admin, shots: os.Getenv("EDDY_CONSOLE_SCREENSHOTS")}
	if s.shots == "" {
		s.shots = t.ArtifactDir()
	}

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	// Cleanups run last first: the browser goes (ending its streams)
	// before eddy closes and the server waits for its requests.
	t.Cleanup(cancelAlloc)
	t.Cleanup(cancelBrowser)
	// The first Do starts the browser and binds its life to the context
	// it gets: the browser's own, with no timeout.
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	s.browser = browser
	return s
}

// token creates a token and returns its secret.
func (s *stack) token(p auth.CreateParams) string {
	s.t.Helper()
	_, secret := s.srv.Token(p)
	return secret
}

// call sends an API request as the admin; body is JSON-encoded unless it
// is a string. It returns the status, the Eddy-Seq header and the body.
func (s *stack) call(t *testing.T, method, path string, body any) (int, string, []byte) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.srv.URL+"/api/v1"+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.admin)
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Eddy-Seq"), out
}

// must is call that fails t unless the status is want.
func (s *stack) must(t *testing.T, want int, method, path string, body any) []byte {
	t.Helper()
	status, _, out := s.call(t, method, path, body)
	if status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, out)
	}
	return out
}

// put writes an entity and returns the seq of its row.
func (s *stack) put(t *testing.T, typ, id string, props any) string {
	t.Helper()
	status, seq, out := s.call(t, "PUT", "/spaces/default/entities/"+typ+"/"+id, props)
	if status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("put %s/%s: status %d: %s", typ, id, status, out)
	}
	return seq
}

// batch writes n entities of typ (ids e1..en, new ones each call) in one
// request and returns the seq of the last row.
func (s *stack) batch(t *testing.T, typ string, n int) int64 {
	t.Helper()
	ms := make([]map[string]any, n)
	for i := range ms {
		s.batched++
		ms[i] = map[string]any{"op": "put", "type": typ, "entityId": fmt.Sprintf("e%d", s.batched),
			"properties": map[string]any{"n": s.batched}}
	}
	_, seq, out := s.call(t, "POST", "/spaces/default/mutations", map[string]any{"mutations": ms})
	last, err := strconv.ParseInt(seq, 10, 64)
	if err != nil {
		t.Fatalf("batch: Eddy-Seq %q: %s", seq, out)
	}
	return last
}

// fence waits until the triggers handled every row <= seq.
func (s *stack) fence(t *testing.T, seq string, triggers string) {
	t.Helper()
	var ans struct {
		Done    bool     `json:"done"`
		Waiting []string `json:"waiting"`
	}
	out := s.must(t, http.StatusOK, "GET", "/spaces/default/fence?seq="+seq+"&triggers="+triggers+"&timeout=30s", nil)
	if err := json.Unmarshal(out, &ans); err != nil || !ans.Done {
		t.Fatalf("fence %s %s: %s (%v)", seq, triggers, out, err)
	}
}

// tab is one browser tab and the script errors seen in it.
type tab struct {
	s   *stack
	ctx context.Context

	mu     sync.Mutex
	errors []string
}

// page is a tab as one test drives it: failures go to t.
type page struct {
	t *testing.T
	*tab
}

// on returns the tab driven by t.
func (b *tab) on(t *testing.T) page { t.Helper(); return page{t: t, tab: b} }

// tab opens a new tab that lives until t ends. At the end of t it fails
// on any script exception or console error the page raised (a content
// security policy violation included); failed requests (401, 403) are
// the API's answers, not errors of the page.
func (s *stack) tab(t *testing.T) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(s.browser)
	b := &tab{s: s, ctx: ctx}
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	entries := chromedp.Events(ctx, cdplog.EntryAdded)
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enable log: %v", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg = d.Exception.Description
			}
			b.fail(fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, msg))
		}
	})
	wg.Go(func() {
		for ev, err := range entries {
			if err != nil {
				return
			}
			if e := ev.Entry; e.Level == cdplog.EntryLevelError && e.Source != cdplog.EntrySourceNetwork {
				b.fail(fmt.Sprintf("console %s: %s (%s)", e.Source, e.Text, e.URL))
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errors {
			t.Errorf("page: %s", e)
		}
	})
	return b
}

func (b *tab) fail(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errors = append(b.errors, msg)
}

// do runs actions with the step timeout.
func (p page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.t.Fatalf("browser: %v (at %s)%s", err, p.location(), p.dump())
	}
}

// dump describes the page for a failure message: its text, and the
// screenshot saved in the test's artifact directory.
func (p page) dump() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main") ? document.querySelector("main").innerText : ""`))
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	name := filepath.Join(p.t.ArtifactDir(), "failure.png")
	if err == nil {
		err = os.WriteFile(name, png, 0o644)
	}
	if err != nil {
		name = err.Error()
	}
	if len(text) > 2000 {
		text = text[:2000] + "…"
	}
	return fmt.Sprintf("\npage text:\n%s\nscreenshot: %s", text, name)
}

// location is the page's URL, for failure messages.
func (p page) location() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	u, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
	if err != nil {
		return "?"
	}
	return u
}

// eval evaluates a script and decodes its result into T.
func eval[T any](p page, script string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script))
	if err != nil {
		p.t.Fatalf("evaluate %q: %v", script, err)
	}
	return v
}

// open navigates to a console path (relative to the server).
func (p page) open(path string) {
	p.t.Helper()
	p.do(chromedp.Navigate(p.s.srv.URL + path))
}

// visible waits until the CSS selector matches a visible element.
func (p page) visible(sel string) {
	p.t.Helper()
	p.do(chromedp.WaitVisible(chromedp.CSS(sel)))
}

// until waits for a script condition to be true (checked on every
// animation frame).
func (p page) until(cond string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(stepTimeout))); err != nil {
		p.t.Fatalf("wait for %s: %v (at %s)%s", cond, err, p.location(), p.dump())
	}
}

// text returns the text of the first element the CSS selector matches.
func (p page) text(sel string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		p.t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// count returns how many elements match the CSS selector now.
func (p page) count(sel string) int {
	p.t.Helper()
	return eval[int](p, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel))
}

// signIn signs in with a token from the console's sign-in form.
func (p page) signIn(token string) {
	p.t.Helper()
	p.open("/")
	p.visible("#signin #token")
	p.do(chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS(`#signin button[type="submit"]`)))
	p.visible("#who")
}

// shot saves a screenshot of the viewport (or of the element sel) as
// name.png.
func (p page) shot(name, sel string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, stepTimeout)
	defer cancel()
	var (
		png []byte
		err error
	)
	if sel == "" {
		png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
	} else {
		png, err = chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	}
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(p.s.shots, 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.s.shots, name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}
