package views

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// streamClientEnv selects the client mode of the test binary: the
// benchmark re-executes itself with it set, so the client sockets and
// their readers live in another process than the server's streams.
const streamClientEnv = "EDDY_VIEWS_BENCH_CLIENT"

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkViewStreams opens EDDY_BENCH_STREAMS live view streams
// (default 1,000) over EDDY_BENCH_VIEWS views (default 100, fieldEquals
// on project) from a child process, measures the server's memory per
// idle stream, then commits EDDY_BENCH_RATE tasks per second (default
// 100) for EDDY_BENCH_SECONDS (default 10), each in one view's project in
// turn, and reports the latency from the write call to the client reading
// the page (p50, p99, max) over every delivery. EDDY_BENCH_DRIVER picks
// sqlite or postgres (the default).
func BenchmarkViewStreams(b *testing.B) {
	streams := envInt("EDDY_BENCH_STREAMS", 1000)
	nviews := envInt("EDDY_BENCH_VIEWS", 100)
	rate := envInt("EDDY_BENCH_RATE", 100)
	seconds := envInt("EDDY_BENCH_SECONDS", 10)
	d := drivers[1]
	if os.Getenv("EDDY_BENCH_DRIVER") == "sqlite" {
		d = drivers[0]
	}
	se := newStreamEnv(b, d.open(b), time.Hour)
	cursors := make([]string, nviews)
	for v := range cursors {
		name := fmt.Sprintf("v%03d", v)
		se.putView(name, fmt.Sprintf(`{"version":"v1","types":["task"],"filter":{"fieldEquals":{"field":"project","expected":"p%03d"}}}`, v))
		cursors[v] = se.cursorNow(name)
	}
	// Memory per idle stream is the slope between half the streams and
	// all of them, so one-time costs (the database pool growing while
	// the first streams open, the feed) do not count.
	child, out, in := startStreamClients(b, se.srv.URL, streams, nviews)
	for _, c := range cursors {
		fmt.Fprintln(in, c)
	}
	expectLine(b, out, "half")
	heap0, stack0 := memNow()
	fmt.Fprintln(in, "more")
	expectLine(b, out, "ready")
	heap1, stack1 := memNow()
	streams -= streams / 2
	if p := os.Getenv("EDDY_BENCH_HEAPPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	b.ReportMetric(float64(heap1-heap0)/float64(streams), "heap-B/stream")
	b.ReportMetric(float64(stack1-stack0)/float64(streams), "stack-B/stream")
	b.ReportMetric(float64(heap1+stack1-heap0-stack0)/float64(streams), "B/idle-stream")
	streams = envInt("EDDY_BENCH_STREAMS", 1000)

	tick := time.NewTicker(time.Second / time.Duration(rate))
	commits := rate * seconds
	start := time.Now()
	for i := range commits {
		<-tick.C
		se.write(put("task", fmt.Sprintf("t%d", i), fmt.Sprintf(`{"project":"p%03d","t":%d}`, i%nviews, time.Now().UnixNano())))
	}
	tick.Stop()
	b.ReportMetric(float64(commits)/time.Since(start).Seconds(), "commits/s")
	fmt.Fprintf(in, "end %d\n", commits/nviews)
	var res streamResult
	if err := json.Unmarshal([]byte(expectLine(b, out, "result ")), &res); err != nil {
		b.Fatal(err)
	}
	in.Close()
	if err := child.Wait(); err != nil {
		b.Fatalf("client process: %v", err)
	}
	if res.Missing > 0 {
		b.Errorf("%d streams missed deliveries", res.Missing)
	}
	b.ReportMetric(float64(res.Deliveries), "deliveries")
	b.ReportMetric(res.P50, "p50-ms")
	b.ReportMetric(res.P99, "p99-ms")
	b.ReportMetric(res.Max, "max-ms")
}

// memNow returns the live heap and the goroutine stacks after a few
// collections (stacks shrink by half per collection while mostly unused).
func memNow() (heap, stack uint64) {
	for range 4 {
		runtime.GC()
	}
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse
}

func startStreamClients(b *testing.B, url string, streams, nviews int) (*exec.Cmd, *bufio.Reader, io.WriteCloser) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), streamClientEnv+"="+url,
		"EDDY_BENCH_STREAMS="+strconv.Itoa(streams), "EDDY_BENCH_VIEWS="+strconv.Itoa(nviews))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return cmd, bufio.NewReader(out), in
}

// expectLine reads child output until a line starting with prefix and
// returns the rest of it.
func expectLine(b *testing.B, out *bufio.Reader, prefix string) string {
	b.Helper()
	for {
		l, err := out.ReadString('\n')
		if err != nil {
			b.Fatalf("client process: %v (waiting for %q)", err, prefix)
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), prefix); ok {
			return rest
		}
	}
}

// streamResult is what the client process reports.
type streamResult struct {
	Deliveries int64   `json:"deliveries"`
	Missing    int64   `json:"missing"`
	P50        float64 `json:"p50"`
	P99        float64 `json:"p99"`
	Max        float64 `json:"max"`
}

// latencies counts latencies in 100 µs buckets up to 10 s.
type latencies struct{ b [100_001]atomic.Int64 }

func (h *latencies) add(d time.Duration) {
	h.b[min(max(int(d/(100*time.Microsecond)), 0), len(h.b)-1)].Add(1)
}

func (h *latencies) quantile(q float64, total int64) float64 {
	want := int64(q * float64(total))
	var acc int64
	for i := range h.b {
		if acc += h.b[i].Load(); acc > want {
			return float64(i) / 10
		}
	}
	return float64(len(h.b)) / 10
}

// runStreamClients is the client process: it reads one cursor per view
// from stdin, opens the streams (stream i follows view i mod views),
// says "ready", reads until every stream got the count of upserts named
// by "end N", and prints "result {json}".
func runStreamClients(url string) {
	streams, nviews := envInt("EDDY_BENCH_STREAMS", 1000), envInt("EDDY_BENCH_VIEWS", 100)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 1<<20)
	cursors := make([]string, nviews)
	for i := range cursors {
		if !sc.Scan() {
			fmt.Fprintln(os.Stderr, "missing cursors")
			os.Exit(1)
		}
		cursors[i] = sc.Text()
	}
	var (
		hist  latencies
		total atomic.Int64
		ready sync.WaitGroup
	)
	counts := make([]atomic.Int64, streams)
	ready.Add(streams / 2)
	for i := range streams {
		if i == streams/2 {
			ready.Wait()
			fmt.Println("half")
			if !sc.Scan() || sc.Text() != "more" {
				os.Exit(1)
			}
			ready.Add(streams - streams/2)
		}
		conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "dial:", err)
			os.Exit(1)
		}
		req := fmt.Sprintf("GET /v%03d?cursor=%s HTTP/1.1\r\nHost: bench\r\n\r\n", i%nviews, cursors[i%nviews])
		go readViewStream(conn, req, &counts[i], &hist, &total, ready.Done)
	}
	ready.Wait()
	fmt.Println("ready")
	var end int64 = -1
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "end "); ok {
			end, _ = strconv.ParseInt(v, 10, 64)
			break
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	var missing int64
	for i := range counts {
		for counts[i].Load() < end && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if counts[i].Load() < end {
			missing++
		}
	}
	res := streamResult{Deliveries: total.Load(), Missing: missing}
	res.P50, res.P99, res.Max = hist.quantile(0.5, res.Deliveries), hist.quantile(0.99, res.Deliveries), hist.quantile(1, res.Deliveries-1)
	j, _ := json.Marshal(res)
	fmt.Printf("result %s\n", j)
	_, _ = io.Copy(io.Discard, os.Stdin) // the parent closes stdin when done
	os.Exit(0)
}

// readViewStream sends a raw stream request and records, for every
// upsert of every page, the latency from the "t" its record carries.
func readViewStream(conn net.Conn, req string, count *atomic.Int64, hist *latencies, total *atomic.Int64, opened func()) {
	defer conn.Close()
	if _, err := io.WriteString(conn, req); err != nil {
		opened()
		return
	}
	br := bufio.NewReaderSize(conn, 4096)
	signaled := false
	for {
		l, err := br.ReadBytes('\n')
		if err != nil {
			if !signaled {
				opened()
			}
			return
		}
		now := time.Now().UnixNano()
		switch {
		case !signaled && len(bytes.TrimSpace(l)) == 0: // the end of the response head
			signaled = true
			opened()
		case bytes.HasPrefix(l, []byte(`{"previousCursor"`)):
			for rest := l; ; {
				i := bytes.Index(rest, []byte(`"t":`))
				if i < 0 {
					break
				}
				rest = rest[i+4:]
				j := bytes.IndexAny(rest, ",}")
				if t, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
					hist.add(time.Duration(now - t))
					total.Add(1)
					count.Add(1)
				}
			}
		}
	}
}
