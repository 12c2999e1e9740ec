package harness

import (
	"io"
	"log/slog"
	"time"
)

// Config is what a scenario is run with.
type Config struct {
	// Quick selects the reduced sizes of `make bench-quick`.
	Quick bool
	// Dir is a scratch directory the scenario may create files under.
	Dir string
	// PGAdminURL names the PostgreSQL server; each scenario creates its
	// own databases on it.
	PGAdminURL string
	// Self is the path of the running executable, re-executed for
	// client processes.
	Self string
	// Log receives progress lines (stderr).
	Log *slog.Logger
}

// Pick returns quick under -quick and full otherwise.
func Pick[T any](c Config, quick, full T) T {
	if c.Quick {
		return quick
	}
	return full
}

// Window is how long a throughput measurement runs.
func (c Config) Window() time.Duration { return Pick(c, time.Second, 3*time.Second) }

// Discard is a logger that drops everything, for the systems under test.
func Discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
