// Command receiver is the webhook receiver of the todo example: it
// serves POST /hook (logs each notify-on-change delivery) and POST
// /overdue (the mark-overdue cron sweep) on 127.0.0.1:9000. See
// examples/todo/README.md.
//
//	TODO_WEBHOOK_SECRET=whsec_... go run ./examples/todo/receiver [-addr 127.0.0.1:9000]
//
// Environment: TODO_WEBHOOK_SECRET (required) is the functions' secret;
// EDDY_SERVER (default http://127.0.0.1:7070) and EDDY_TOKEN (default: the
// contents of ./eddy-data/admin.token) are how the sweep reaches eddy.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/eddy-run/eddy/examples/todo/receiver/hook"
)

// Defaults of the environment.
const (
	defaultServer = "http://127.0.0.1:7070"
	tokenFile     = "eddy-data/admin.token"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on")
	flag.Parse()
	cfg, err := configFrom(os.Getenv, filepath.FromSlash(tokenFile))
	if err != nil {
		log.Fatal(err)
	}
	h, err := hook.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("receiver listening on http://%s (eddy at %s)", *addr, cfg.Server)
	log.Fatal(srv.ListenAndServe())
}

// configFrom reads the receiver's configuration from the environment,
// taking the token from tokenPath when EDDY_TOKEN is empty.
func configFrom(getenv func(string) string, tokenPath string) (hook.Config, error) {
	cfg := hook.Config{Secret: getenv("TODO_WEBHOOK_SECRET"), Server: getenv("EDDY_SERVER"), Token: getenv("EDDY_TOKEN")}
	if cfg.Secret == "" {
		return cfg, errors.New("set TODO_WEBHOOK_SECRET to the secret of examples/todo/eddy.yaml")
	}
	if cfg.Server == "" {
		cfg.Server = defaultServer
	}
	if cfg.Token != "" {
		return cfg, nil
	}
	b, err := os.ReadFile(tokenPath)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, fmt.Errorf("no eddy token: set EDDY_TOKEN or run from the directory holding %s (start eddy serve first)", tokenPath)
	}
	if err != nil {
		return cfg, fmt.Errorf("read token: %w", err)
	}
	cfg.Token = strings.TrimSpace(string(b))
	return cfg, nil
}
