// Package benchproc holds what the in-repo stream benchmarks share: a
// child process running the same test binary as the clients (so the
// client sockets and readers live outside the measured server), the
// line protocol between them, a latency histogram and memory readings.
package benchproc

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// EnvInt returns the positive integer in the environment variable name,
// or def.
func EnvInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// Child starts the running test binary again, running no test, with env
// added to its environment (the child's TestMain looks for it and runs
// the clients). It returns the command, the child's standard output and
// its standard input.
func Child(tb testing.TB, env ...string) (*exec.Cmd, *bufio.Reader, io.WriteCloser) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$") //nolint:noctx // it ends when its input closes, after the test's context
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return cmd, bufio.NewReader(out), in
}

// ExpectLine reads child output until a line starting with prefix and
// returns the rest of it.
func ExpectLine(tb testing.TB, out *bufio.Reader, prefix string) string {
	tb.Helper()
	for {
		l, err := out.ReadString('\n')
		if err != nil {
			tb.Fatalf("client process: %v (waiting for %q)", err, prefix)
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), prefix); ok {
			return rest
		}
	}
}

// Histogram counts latencies in 100 µs buckets up to 10 s. It is safe for
// concurrent use.
type Histogram struct{ b [100_001]atomic.Int64 }

// Add counts one latency.
func (h *Histogram) Add(d time.Duration) {
	h.b[min(max(int(d/(100*time.Microsecond)), 0), len(h.b)-1)].Add(1)
}

// Quantile returns the q quantile of total counted latencies, in
// milliseconds.
func (h *Histogram) Quantile(q float64, total int64) float64 {
	want := int64(q * float64(total))
	var acc int64
	for i := range h.b {
		if acc += h.b[i].Load(); acc > want {
			return float64(i) / 10
		}
	}
	return float64(len(h.b)) / 10
}

// MemNow returns the live heap, the goroutine stacks and the process RSS
// after a few collections (stacks shrink by half per collection while
// mostly unused, as in a long-lived server), in bytes.
func MemNow() (heap, stack, rss uint64) {
	for range 4 {
		runtime.GC()
	}
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse, vmRSS()
}

func vmRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
