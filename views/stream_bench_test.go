package views

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/internal/benchproc"
)

// streamClientEnv selects the client mode of the test binary (see
// benchproc.Child): the benchmark re-executes itself with it set, so the
// client sockets and their readers live in another process than the
// server's streams.
const streamClientEnv = "EDDY_VIEWS_BENCH_CLIENT"

// BenchmarkViewStreams opens EDDY_BENCH_STREAMS live view streams
// (default 1,000) over EDDY_BENCH_VIEWS views (default 100, fieldEquals
// on project) from a child process, measures the server's memory per
// idle stream, then commits EDDY_BENCH_RATE tasks per second (default
// 100) for EDDY_BENCH_SECONDS (default 10), each in one view's project in
// turn, and reports the latency from the write call to the client reading
// the page (p50, p99, max) over every delivery. EDDY_BENCH_DRIVER picks
// sqlite or postgres (the default).
func BenchmarkViewStreams(b *testing.B) {
	streams := benchproc.EnvInt("EDDY_BENCH_STREAMS", 1000)
	nviews := benchproc.EnvInt("EDDY_BENCH_VIEWS", 100)
	rate := benchproc.EnvInt("EDDY_BENCH_RATE", 100)
	seconds := benchproc.EnvInt("EDDY_BENCH_SECONDS", 10)
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
	child, out, in := benchproc.Child(b, streamClientEnv+"="+se.srv.URL,
		"EDDY_BENCH_STREAMS="+strconv.Itoa(streams), "EDDY_BENCH_VIEWS="+strconv.Itoa(nviews))
	for _, c := range cursors {
		fmt.Fprintln(in, c)
	}
	benchproc.ExpectLine(b, out, "half")
	heap0, stack0, _ := benchproc.MemNow()
	fmt.Fprintln(in, "more")
	benchproc.ExpectLine(b, out, "ready")
	heap1, stack1, _ := benchproc.MemNow()
	measured := streams - streams/2 // the streams opened between the two figures
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
	b.ReportMetric(float64(heap1-heap0)/float64(measured), "heap-B/stream")
	b.ReportMetric(float64(stack1-stack0)/float64(measured), "stack-B/stream")
	b.ReportMetric(float64(heap1+stack1-heap0-stack0)/float64(measured), "B/idle-stream")

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
	if err := json.Unmarshal([]byte(benchproc.ExpectLine(b, out, "result ")), &res); err != nil {
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

// streamResult is what the client process reports.
type streamResult struct {
	Deliveries int64   `json:"deliveries"`
	Missing    int64   `json:"missing"`
	P50        float64 `json:"p50"`
	P99        float64 `json:"p99"`
	Max        float64 `json:"max"`
}

// runStreamClients is the client process: it reads one cursor per view
// from stdin, opens the streams (stream i follows view i mod views),
// says "ready", reads until every stream got the count of upserts named
// by "end N", and prints "result {json}".
func runStreamClients(url string) {
	streams, nviews := benchproc.EnvInt("EDDY_BENCH_STREAMS", 1000), benchproc.EnvInt("EDDY_BENCH_VIEWS", 100)
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
		hist  benchproc.Histogram
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
	res.P50, res.P99, res.Max = hist.Quantile(0.5, res.Deliveries), hist.Quantile(0.99, res.Deliveries), hist.Quantile(1, res.Deliveries-1)
	j, _ := json.Marshal(res)
	fmt.Printf("result %s\n", j)
	_, _ = io.Copy(io.Discard, os.Stdin) // the parent closes stdin when done
	os.Exit(0)
}

// readViewStream sends a raw stream request and records, for every
// upsert of every page, the latency from the "t" its record carries.
func readViewStream(conn net.Conn, req string, count *atomic.Int64, hist *benchproc.Histogram, total *atomic.Int64, opened func()) {
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
					hist.Add(time.Duration(now - t))
					total.Add(1)
					count.Add(1)
				}
			}
		}
	}
}
