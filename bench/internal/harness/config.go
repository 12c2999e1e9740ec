package harness

import (
	"io"
	"log/slog"
	"os"
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
	// Profile is the directory for CPU profiles ("" for none); a child
	// process writes its own there.
	Profile string
	// Log receives progress lines (stderr).
	Log *slog.Logger
}

// The environment that carries a Config to a child process.
const (
	envQuick   = "EDDYBENCH_QUICK"
	envDir     = "EDDYBENCH_DIR"
	envPG      = "EDDYBENCH_PG"
	envProfile = "EDDYBENCH_PROFILE"
)

// ChildEnv is the environment that gives a child process c, with dir as
// its scratch directory (ConfigFromEnv reads it back).
func (c Config) ChildEnv(dir string) []string {
	quick := ""
	if c.Quick {
		quick = "1"
	}
	return []string{envQuick + "=" + quick, envDir + "=" + dir, envPG + "=" + c.PGAdminURL, envProfile + "=" + c.Profile}
}

// ConfigFromEnv is the Config a parent passed to this child process with
// ChildEnv; its progress lines go to stderr.
func ConfigFromEnv() Config {
	self, _ := os.Executable()
	return Config{
		Quick: os.Getenv(envQuick) == "1", Dir: os.Getenv(envDir), PGAdminURL: os.Getenv(envPG),
		Profile: os.Getenv(envProfile), Self: self, Log: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
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
