package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/eddy-run/eddy/bench/internal/catchup"
	"github.com/eddy-run/eddy/bench/internal/consume"
	"github.com/eddy-run/eddy/bench/internal/durable"
	"github.com/eddy-run/eddy/bench/internal/fanout"
	"github.com/eddy-run/eddy/bench/internal/harness"
	"github.com/eddy-run/eddy/bench/internal/httpwrite"
	"github.com/eddy-run/eddy/bench/internal/matching"
	"github.com/eddy-run/eddy/bench/internal/report"
)

// scenario runs one scenario; on error, the section holds what it
// measured before failing.
type scenario func(ctx context.Context, c harness.Config) (report.Section, error)

var scenarios = map[int]scenario{
	1: durable.Run,
	2: consume.Run,
	3: fanout.Run,
	4: matching.Run,
	5: catchup.Run,
	6: httpwrite.Run,
}

// errScenarios reports that at least one scenario failed (its section
// says why); the results are written anyway.
var errScenarios = errors.New("some scenarios failed")

// run runs the selected scenarios in order and writes the results; it
// fails if any scenario did.
func run(ctx context.Context, opts options, logger *slog.Logger) error {
	ids, err := opts.selected()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "eddybench-")
	if err != nil {
		return fmt.Errorf("scratch dir: %w", err)
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("own executable: %w", err)
	}
	c := harness.Config{Quick: opts.quick, Dir: dir, PGAdminURL: opts.pg, Self: self, Profile: opts.profile, Log: logger}
	start := time.Now()
	rep := &report.Report{Meta: describe(ctx, c)}
	for _, id := range ids {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logger.Info("scenario start", "id", id)
		t := time.Now()
		cpu0, ok0 := readCPUTimes()
		sec, err := profiled(opts.profile, id, func() (report.Section, error) { return scenarios[id](ctx, c) })
		cpu1, ok1 := readCPUTimes()
		if note := stealNote(cpu0, cpu1, ok0 && ok1); note != "" {
			sec.Notes = append(sec.Notes, note)
		}
		sec.ID = id
		if err != nil {
			sec.Err = err.Error()
			logger.Error("scenario failed", "id", id, "err", err)
		}
		logger.Info("scenario done", "id", id, "took", time.Since(t).Round(time.Millisecond))
		rep.Sections = append(rep.Sections, sec)
	}
	rep.Meta.Took = time.Since(start).Round(time.Second).String()
	if err := write(rep, opts); err != nil {
		return err
	}
	for _, s := range rep.Sections {
		if s.Err != "" {
			return errScenarios
		}
	}
	return nil
}

// write prints the Markdown, saves it to -out and the charts to -svg.
func write(rep *report.Report, opts options) error {
	if err := rep.Markdown(os.Stdout); err != nil {
		return err
	}
	var errs []error
	if opts.out != "" {
		errs = append(errs, writeFile(opts.out, rep.Markdown))
	}
	if opts.svg != "" {
		for _, s := range rep.Sections {
			errs = append(errs, writeFile(filepath.Join(opts.svg, fmt.Sprintf("scenario-%d.svg", s.ID)), s.SVG))
		}
	}
	return errors.Join(errs...)
}

// writeFile creates path (and its directory) and fills it with fill.
func writeFile(path string, fill func(w io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := fill(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// profiled runs fn under the CPU profiler when dir is set, writing
// dir/scenario-<id>.cpu.pprof.
func profiled(dir string, id int, fn func() (report.Section, error)) (report.Section, error) {
	stop, err := harness.StartProfile(dir, fmt.Sprintf("scenario-%d.cpu.pprof", id))
	if err != nil {
		return report.Section{}, err
	}
	defer stop()
	return fn()
}
