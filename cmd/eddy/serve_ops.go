package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
)

// opsOptions are the operator-facing flags of eddy serve: logs and CORS.
type opsOptions struct {
	logFormat   string
	logLevel    string
	corsOrigins []string
}

// bind defines the flags on cmd.
func (o *opsOptions) bind(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.logFormat, "log-format", "text", "log format: text (logfmt-like key=value) or json (one object a line)")
	f.StringVar(&o.logLevel, "log-level", "info", "least severe level logged: debug, info, warn or error")
	f.StringArrayVar(&o.corsOrigins, "cors-origin", nil, `browser origin allowed to call the API cross-origin, e.g. https://app.example (repeatable; "*" allows any)`)
}

// validate rejects values a usage error must name.
func (o *opsOptions) validate() error {
	if o.logFormat != "text" && o.logFormat != "json" {
		return usagef("--log-format must be text or json, not %q", o.logFormat)
	}
	if _, err := parseLevel(o.logLevel); err != nil {
		return err
	}
	for _, origin := range o.corsOrigins {
		if err := validOrigin(origin); err != nil {
			return err
		}
	}
	return nil
}

// parseLevel reads a --log-level value.
func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		_ = l.UnmarshalText([]byte(s))
		return l, nil
	}
	return 0, usagef("--log-level must be debug, info, warn or error, not %q", s)
}

// validOrigin checks a --cors-origin: "*" or scheme://host[:port] with
// nothing after it (a browser's Origin header never has a path).
func validOrigin(origin string) error {
	if origin == "*" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return usagef("--cors-origin %q must be scheme://host[:port] (no path), or *", origin)
	}
	return nil
}

// newLogger builds the server's logger on w.
func (o *opsOptions) newLogger(w io.Writer) *slog.Logger {
	level, _ := parseLevel(o.logLevel) // validated
	ho := &slog.HandlerOptions{Level: level}
	if o.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, ho))
	}
	return slog.New(slog.NewTextHandler(w, ho))
}

// swapHandler serves the handler last set: the starting handler while
// the store migrates, then the server.
type swapHandler struct{ h atomic.Pointer[http.Handler] }

func (s *swapHandler) set(h http.Handler) { s.h.Store(&h) }

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}
