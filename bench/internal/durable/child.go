package durable

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/eddy-run/eddy/bench/internal/harness"
)

// envSystem names the system a child process measures.
const envSystem = "EDDYBENCH_DURABLE_SYSTEM"

// IsChild reports whether this process is a child measuring one system
// of the scenario.
func IsChild() bool { return os.Getenv(envSystem) != "" }

// round is one round's figures of one system, by writer count: the
// commits/s, and the child's CPU time a commit in µs.
type round struct {
	Rate figures `json:"rate"`
	CPU  figures `json:"cpu"`
}

// RunChild is the child process of one system: it opens the system its
// environment names, prints "ready", then answers every "measure WINDOW"
// line on its stdin with "result {round}" until stdin closes. It
// returns the exit code; a failure is printed as "error MSG".
func RunChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := child(ctx, harness.ConfigFromEnv(), os.Getenv(envSystem), os.Stdin, os.Stdout); err != nil {
		fmt.Printf("error %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	return 0
}

// child opens the system named name and measures it on every command
// read from r, answering on w.
func child(ctx context.Context, c harness.Config, name string, r io.Reader, w io.Writer) error {
	s, ok := systemNamed(name)
	if !ok {
		return fmt.Errorf("no system %q", name)
	}
	stopProfile, err := harness.StartProfile(c.Profile, "scenario-1-"+slug(name)+".cpu.pprof")
	if err != nil {
		return err
	}
	defer stopProfile()
	in, err := s.open(ctx, c)
	if err != nil {
		return err
	}
	defer in.close() //nolint:errcheck // best effort at the end of the scenario
	return harness.Labeled(ctx, "system", name, harness.AsServedIf(in.served, func(ctx context.Context) error {
		return answer(ctx, in, r, w)
	}))
}

// answer prints "ready" and measures in for every "measure WINDOW" read
// from r; the first measurement starts with a warm-up.
func answer(ctx context.Context, in instance, r io.Reader, w io.Writer) error {
	fmt.Fprintln(w, "ready")
	sc := bufio.NewScanner(r)
	for warm := false; sc.Scan(); warm = true {
		window, ok := strings.CutPrefix(sc.Text(), "measure ")
		d, err := time.ParseDuration(window)
		if !ok || err != nil {
			return fmt.Errorf("bad command %q", sc.Text())
		}
		res, err := measure(ctx, d, in, !warm)
		if err != nil {
			return err
		}
		j, err := json.Marshal(res)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "result %s\n", j)
	}
	return sc.Err()
}

// systemNamed finds a system by name.
func systemNamed(name string) (system, bool) {
	for _, s := range systems {
		if s.name == name {
			return s, true
		}
	}
	return system{}, false
}

// slug is name as a file name part.
func slug(name string) string { return strings.ReplaceAll(name, " ", "-") }
