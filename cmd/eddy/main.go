// Command eddy is the one eddy binary: `eddy serve` runs the server, and
// the other commands are a CLI that talks to a running server over HTTP.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1 // the command failed (a server problem, I/O, ...)
	exitUsage       = 2 // the command line or its input was wrong
	exitInterrupted = 130
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the eddy command line args and returns the process exit code.
// It reads the environment and standard input of the process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr, stdin: os.Stdin, getenv: os.Getenv}
	return a.run(ctx, args)
}

// run executes args and maps the outcome to an exit code: the one place
// that does.
func (a *app) run(ctx context.Context, args []string) int {
	root := a.rootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	err = a.withTokenSource(err)
	a.printError(err)
	return exitCode(err)
}

// exitCode maps an error returned by a command to the exit code.
func exitCode(err error) int {
	var ue *usageError
	var ce *commandError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &ce):
		return exitError
	default:
		// Errors cobra returns before a command runs: unknown commands,
		// flags, or a wrong number of arguments.
		return exitUsage
	}
}

// printError writes err to stderr as "error: <code>: <message>" for a
// problem from the server (with its details, if any), else as
// "error: <message>".
func (a *app) printError(err error) {
	fmt.Fprintf(a.stderr, "error: %v\n", err)
	if pe, ok := problemOf(err); ok && len(pe.Details) > 0 {
		if d, jerr := json.Marshal(pe.Details); jerr == nil {
			fmt.Fprintf(a.stderr, "details: %s\n", d)
		}
	}
	var ue *usageError
	if errors.As(err, &ue) || exitCode(err) == exitUsage {
		fmt.Fprintln(a.stderr, "run 'eddy help' for usage")
	}
}

// usageError reports a wrong command line or input; it exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a *usageError.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// commandError marks an error returned by a running command (as opposed to
// one cobra returns while parsing); it exits 1.
type commandError struct{ err error }

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }
