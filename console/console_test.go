package console

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestServes(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{
		"/": true, "/spaces/default/stream": true, "/assets/app.js": true, "/spaces/": true,
		"/api/v1": false, "/healthz": false, "/metrics": false, "/spaces": false, "/assets": false, "/favicon.ico": false, "": false,
	} {
		if got := Serves(path); got != want {
			t.Errorf("Serves(%q) = %t, want %t", path, got, want)
		}
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	h := Handler()
	for path, ctype := range map[string]string{
		"/":                          "text/html; charset=utf-8",
		"/spaces/default/rows/3":     "text/html; charset=utf-8",
		"/assets/app.js":             "text/javascript; charset=utf-8",
		"/assets/console.css":        "text/css; charset=utf-8",
		"/assets/favicon.svg":        "image/svg+xml",
		"/spaces/x/entities/a%2Fb/c": "text/html; charset=utf-8",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ctype {
			t.Errorf("GET %s: %d %q, want 200 %q", path, rec.Code, rec.Header().Get("Content-Type"), ctype)
		}
		if rec.Header().Get("Content-Security-Policy") != ContentSecurityPolicy || rec.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", path, rec.Header())
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/assets/missing.js", nil))
	if rec.Code != http.StatusNotFound || rec.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("a missing asset: %d %v", rec.Code, rec.Header())
	}
}

// TestNoInlineCode keeps the console within its policy: no inline script
// or style in the page, no event handler attributes, no eval, and HTML
// parsed only from constant markup.
func TestNoInlineCode(t *testing.T) {
	t.Parallel()
	checks := []struct {
		what string
		re   *regexp.Regexp
	}{
		{"an inline script", regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`)},
		{"a script without src", regexp.MustCompile(`<script(?:\s(?:[^>s]|s[^r])*)?>`)},
		{"a style element or attribute", regexp.MustCompile(`<style|\sstyle=`)},
		{"an event handler attribute", regexp.MustCompile(`\son[a-z]+=`)},
		{"eval", regexp.MustCompile(`\beval\(|new Function\(|setTimeout\(["'\x60]`)},
		{"a javascript: URL", regexp.MustCompile(`javascript:`)},
		{"HTML from data", regexp.MustCompile(`(?:innerHTML|outerHTML)\s*=\s*[^'\s]|insertAdjacentHTML|document\.write`)},
	}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		for _, c := range checks {
			if loc := c.re.FindIndex(body); loc != nil {
				line := strings.Count(string(body[:loc[0]]), "\n") + 1
				t.Errorf("%s:%d: %s: %q", p, line, c.what, body[loc[0]:loc[1]])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
