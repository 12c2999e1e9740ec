package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// Patterns are the net/http ServeMux patterns the console answers: the
// shell at "/" and under /spaces/, its files under /assets/.
var Patterns = []string{"GET /{$}", "GET /spaces/", "GET /assets/"}

// Serves reports whether the console answers path, so the server can
// serve it without a token (the console's files carry no data).
func Serves(path string) bool {
	return path == "/" || strings.HasPrefix(path, "/spaces/") || strings.HasPrefix(path, "/assets/")
}

// ContentSecurityPolicy is the policy of every console response: the
// console's own scripts, styles and images only, API calls to its own
// origin, no inline script or style, no plugins, no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; " +
	"frame-ancestors 'none'"

// Headers sets the security headers of a console response.
func Headers(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
	h.Set("Cache-Control", "no-cache")
}

// file is one embedded file, ready to serve.
type file struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves the console. Page paths get the shell (index.html);
// /assets/ paths get the embedded files; an unknown asset is 404. Files
// are revalidated on every load (Cache-Control: no-cache, ETag), so an
// upgraded server never serves a stale script.
func Handler() http.Handler {
	files, err := load()
	if err != nil {
		panic("console: " + err.Error()) // the embedded files are part of the binary
	}
	shell := files["index.html"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Headers(w.Header())
		f := shell
		if name, ok := strings.CutPrefix(r.URL.Path, "/assets/"); ok {
			if f, ok = files[name]; !ok || name == "index.html" {
				http.Error(w, "not found", http.StatusNotFound)
				return
			}
		}
		w.Header().Set("Content-Type", f.ctype)
		w.Header().Set("ETag", f.etag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	})
}

// load reads every embedded file.
func load() (map[string]file, error) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	files := map[string]file{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		files[p] = file{body: body, ctype: contentType(p), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	return files, err
}

// contentType names a file's media type by its extension.
func contentType(p string) string {
	switch path.Ext(p) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}
