// Package hook is the todo example's webhook receiver: the HTTP handler
// behind examples/todo/receiver, importable so tests can run it in
// process.
//
// It serves two endpoints, both for webhook functions of
// examples/todo/eddy.yaml, and refuses any request whose Standard
// Webhooks signature does not verify with the shared secret (401):
//
//   - POST /hook logs one line per delivery of the notify-on-change
//     trigger and answers 204.
//   - POST /overdue is called by the cron trigger mark-overdue: it lists
//     the tasks through eddy's API and marks every task that is past due
//     and not done with {"overdue": true}, writing back with the
//     delivery's Eddy-Cause token so the writes are authored by the
//     trigger.
package hook

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/eddy-run/eddy/functions"
)

// maxBody bounds the request bodies the receiver reads.
const maxBody = 1 << 20

// Config configures the receiver.
type Config struct {
	// Secret verifies every request: the function's "whsec_" secret.
	Secret string
	// Server is eddy's base URL, e.g. http://127.0.0.1:7070.
	Server string
	// Token is the bearer token the overdue sweep reads and writes tasks
	// with (role writer or admin).
	Token string
	// Space holds the tasks (default "default").
	Space string
	// Client sends the API requests (default: a client with a 10s
	// timeout).
	Client *http.Client
	// Logger receives one line per request (default log.Default()).
	Logger *log.Logger
	// Now is the clock dueAt is compared with (default time.Now).
	Now func() time.Time
}

// receiver holds a checked Config.
type receiver struct {
	cfg Config
	api *api
}

// New checks cfg and returns the receiver's handler. The secret must be a
// valid "whsec_" secret; Server and Token are needed by /overdue only.
func New(cfg Config) (http.Handler, error) {
	if _, err := functions.ParseSecret(cfg.Secret); err != nil {
		return nil, fmt.Errorf("hook: secret: %w", err)
	}
	if cfg.Space == "" {
		cfg.Space = "default"
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = log.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	rc := &receiver{cfg: cfg, api: &api{
		base:   strings.TrimRight(cfg.Server, "/") + "/api/v1/spaces/" + cfg.Space,
		token:  cfg.Token,
		client: cfg.Client,
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hook", rc.verified(rc.notify))
	mux.HandleFunc("POST /overdue", rc.verified(rc.overdue))
	return mux, nil
}

// verified reads the request body, checks its signature and hands the
// body to next; a bad signature is 401, a body too large 413.
func (rc *receiver) verified(next func(http.ResponseWriter, *http.Request, []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := functions.Verify(rc.cfg.Secret, r.Header, body, 0); err != nil {
			rc.cfg.Logger.Printf("%s: refused: %v", r.URL.Path, err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		next(w, r, body)
	}
}
