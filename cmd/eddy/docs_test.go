package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eddy-run/eddy/internal/doctest"
)

// docsRoot is the repository root, from this package's directory.
const docsRoot = "../.."

// asEddyEnv makes the test binary run as the eddy command (TestMain), so
// the docs' examples run the code under test without a second build.
const asEddyEnv = "EDDY_TEST_BINARY_AS_EDDY"

// docAddr is the address the docs' examples name; the test rewrites it
// to the address of the document's own server.
const docAddr = "127.0.0.1:7070"

// perDoc bounds one document's examples: only so that an example that
// never ends (a watch marked runnable) fails instead of hanging the test.
// It is no speed assertion: the run takes seconds.
const perDoc = 5 * time.Minute

// TestDocs runs the runnable shell examples of README.md and docs/*.md
// (see package internal/doctest and docs/README.md), each document on a fresh `eddy serve` with its
// own data directory, in order, with bash, curl and jq. A failing
// command, or an HTTP answer of 400 or more, fails the document.
func TestDocs(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the docs' examples need %s: %v", tool, err)
		}
	}
	docs, err := filepath.Glob(filepath.Join(docsRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(docsRoot, "README.md")}, docs...)
	ran := 0
	for _, doc := range docs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := doctest.Extract(raw)
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if len(blocks) == 0 {
			continue
		}
		ran++
		name, _ := filepath.Rel(docsRoot, doc)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runDoc(t, name, blocks)
		})
	}
	if ran == 0 {
		t.Fatal("no document has runnable examples")
	}
}

// eddyBinary returns a directory holding "eddy": this test binary,
// which runs as the eddy command when asEddyEnv is set.
func eddyBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, "eddy")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runDoc starts a server in a fresh directory and runs the document's
// blocks there in one bash process.
func runDoc(t *testing.T, name string, blocks []doctest.Block) { //nolint:thelper // a subtest body
	bin := eddyBinary(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The docs build the CLI as bin/eddy; it is already built.
	if err := os.Symlink(filepath.Join(bin, "eddy"), filepath.Join(dir, "bin", "eddy")); err != nil {
		t.Fatal(err)
	}
	// The docs name repository files (examples/todo/eddy.yaml, ...)
	// relative to the repository root.
	for _, d := range []string{"examples", "docs"} {
		abs, err := filepath.Abs(filepath.Join(docsRoot, d))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	addr := startServer(t, bin, dir)

	ctx, cancel := context.WithTimeout(context.Background(), perDoc)
	defer cancel()
	src := script(name, blocks, addr)
	path := filepath.Join(dir, "examples.sh")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "bash", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"EDDY_SERVER=http://"+addr, "EDDY_TOKEN=", "HOME="+dir, asEddyEnv+"=1", noRaceExitSleep())
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if os.Getenv("EDDY_DOCTEST_TRACE") != "" {
		t.Logf("%s", out)
	}
	if err != nil {
		t.Logf("the script (examples.sh):\n%s", numbered(src))
		t.Fatalf("%s: the examples failed (%v); the last block started is the one that failed:\n%s", name, err, out)
	}
}

// script joins the blocks into one bash script: strict mode, curl that
// fails on an HTTP error, and a marker before each block.
func script(name string, blocks []doctest.Block, addr string) string {
	var b strings.Builder
	b.WriteString("set -euo pipefail\n")
	if os.Getenv("EDDY_DOCTEST_TRACE") != "" {
		b.WriteString("PS4='+ $(date +%T.%N) '; set -x\n")
	}
	// -f with body: an HTTP error fails the example but still shows the
	// problem object; -S shows curl's own errors under -s.
	b.WriteString("curl() { command curl --fail-with-body -S \"$@\"; }\n")
	for _, bl := range blocks {
		fmt.Fprintf(&b, "printf '\\n== %s:%d\\n' >&2\n", name, bl.Line)
		b.WriteString(strings.ReplaceAll(bl.Code, docAddr, addr))
	}
	return b.String()
}

var listening = regexp.MustCompile(`listening on http://([^\s"]+)`)

// startServer runs eddy serve in dir (data in dir/eddy-data, as the docs
// assume) on a free port and returns its address; the test stops it.
func startServer(t *testing.T, bin, dir string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "eddy"), "serve", "--data", filepath.Join(dir, "eddy-data"), "--addr", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "EDDY_DATABASE_URL=", "OTEL_TRACES_EXPORTER=none", asEddyEnv+"=1", noRaceExitSleep())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	addrs := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addrs <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		if err := cmd.Wait(); err != nil {
			t.Errorf("eddy serve: %v\n%s", err, logs.String())
		}
	})
	select {
	case addr := <-addrs:
		return addr
	case <-done:
		t.Fatalf("eddy serve exited before listening:\n%s", logs.String())
	case <-time.After(30 * time.Second):
		t.Fatal("eddy serve did not listen within 30s")
	}
	return ""
}

// numbered prefixes each line of s with its number.
func numbered(s string) string {
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		fmt.Fprintf(&b, "%4d  %s\n", i+1, line)
	}
	return b.String()
}

// noRaceExitSleep is the GORACE setting of the eddy processes the docs
// run: under -race this test binary is eddy, and the race runtime sleeps
// a second at every exit by default, which would dominate every CLI call.
func noRaceExitSleep() string {
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")
}
