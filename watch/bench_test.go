package watch

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/internal/benchproc"
	"github.com/eddy-run/eddy/store/storetest"
)

// benchClientEnv selects the client mode of the test binary: the
// benchmark re-executes itself with it set, so the 10,000 client sockets
// live in another process than the 10,000 server sockets (the open-file
// limit holds one side per process).
const benchClientEnv = "EDDY_WATCH_BENCH_CLIENT"

// BenchmarkWatchers opens EDDY_BENCH_WATCHERS (default 10,000) streams on
// one space from a child process, measures the server's memory per idle
// watcher, then commits at EDDY_BENCH_RATE per second (default 5) for
// EDDY_BENCH_SECONDS (default 5) and reports commit-to-delivery latency
// (row ts to the client's receive time) over every delivery, and the
// processor time per commit of the server (in its own code and in the
// kernel) and of the clients.
func BenchmarkWatchers(b *testing.B) {
	n := benchproc.EnvInt("EDDY_BENCH_WATCHERS", 10_000)
	rate := benchproc.EnvInt("EDDY_BENCH_RATE", 5)
	seconds := benchproc.EnvInt("EDDY_BENCH_SECONDS", 5)
	e := newEnv(b, drivers[0].open(b), Options{})

	heap0, stack0, rss0 := benchproc.MemNow()
	child, out, in := benchproc.Child(b, benchClientEnv+"="+e.srv.URL, "EDDY_BENCH_WATCHERS="+strconv.Itoa(n))
	benchproc.ExpectLine(b, out, "ready")
	heap1, stack1, rss1 := benchproc.MemNow()
	b.ReportMetric(float64(heap1-heap0)/float64(n), "heap-B/watcher")
	b.ReportMetric(float64(stack1-stack0)/float64(n), "stack-B/watcher")
	if p := os.Getenv("EDDY_BENCH_HEAPPROFILE"); p != "" {
		writeHeapProfile(b, p)
	}
	b.ReportMetric(float64(rss1-rss0)/float64(n), "rss-B/watcher")

	if p := os.Getenv("EDDY_BENCH_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	var last int64
	user0, sys0 := benchproc.CPUNow()
	for i := 0; i < rate*seconds; i++ {
		<-tick.C
		last = e.write("task", 1)
	}
	tick.Stop()
	fmt.Fprintf(in, "end %d\n", last)
	var res benchResult
	if err := json.Unmarshal([]byte(benchproc.ExpectLine(b, out, "result ")), &res); err != nil {
		b.Fatal(err)
	}
	user1, sys1 := benchproc.CPUNow()
	commits := float64(rate * seconds)
	b.ReportMetric(msOf(user1-user0)/commits, "server-user-ms/commit")
	b.ReportMetric(msOf(sys1-sys0)/commits, "server-sys-ms/commit")
	b.ReportMetric(res.ClientCPU/commits, "client-ms/commit")
	stopHub(b, e.hub)
	in.Close()
	if err := child.Wait(); err != nil {
		b.Fatalf("client process: %v", err)
	}
	if res.Missing > 0 {
		b.Errorf("%d deliveries missing", res.Missing)
	}
	b.ReportMetric(float64(res.Deliveries), "deliveries")
	b.ReportMetric(res.P50, "p50-ms")
	b.ReportMetric(res.P99, "p99-ms")
	b.ReportMetric(res.Max, "max-ms")
}

// benchResult is what the client process reports.
type benchResult struct {
	Deliveries int64   `json:"deliveries"`
	Missing    int64   `json:"missing"`
	P50        float64 `json:"p50"`
	P99        float64 `json:"p99"`
	Max        float64 `json:"max"`
	// ClientCPU is the client process's processor time, in ms, from
	// "ready" to the last row reaching every stream.
	ClientCPU float64 `json:"clientCPU"`
}

// msOf is d in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runBenchClients is the client process: it opens the streams, says
// "ready", reads until every stream has the seq named by "end N" on
// stdin, and prints "result {json}".
func runBenchClients(url string) {
	n := benchproc.EnvInt("EDDY_BENCH_WATCHERS", 10_000)
	addr := strings.TrimPrefix(url, "http://")
	var (
		hist  benchproc.Histogram
		total atomic.Int64
		ready sync.WaitGroup
		end   atomic.Int64
		wg    sync.WaitGroup
	)
	end.Store(-1)
	lasts := make([]atomic.Int64, n)
	sem := make(chan struct{}, 100)
	ready.Add(n)
	for i := range n {
		sem <- struct{}{}
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dial:", err)
			os.Exit(1)
		}
		wg.Go(func() {
			readStream(conn, &lasts[i], &hist, &total, func() { <-sem; ready.Done() })
		})
	}
	ready.Wait()
	fmt.Println("ready")
	user0, sys0 := benchproc.CPUNow()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "end "); ok {
			e, _ := strconv.ParseInt(v, 10, 64)
			end.Store(e)
			break
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	var missing int64
	for i := range lasts {
		for lasts[i].Load() < end.Load() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if lasts[i].Load() < end.Load() {
			missing++
		}
	}
	user1, sys1 := benchproc.CPUNow()
	res := benchResult{Deliveries: total.Load(), Missing: missing, ClientCPU: msOf(user1 - user0 + sys1 - sys0)}
	res.P50, res.P99, res.Max = hist.Quantile(0.5, res.Deliveries), hist.Quantile(0.99, res.Deliveries), hist.Quantile(1, res.Deliveries-1)
	j, _ := json.Marshal(res)
	fmt.Printf("result %s\n", j)
	_, _ = io.Copy(io.Discard, os.Stdin) // the parent closes stdin when done
	os.Exit(0)
}

// readStream sends a raw watch request on conn and records the latency
// of every row line (chunk framing lines are skipped).
func readStream(conn net.Conn, last *atomic.Int64, hist *benchproc.Histogram, total *atomic.Int64, opened func()) {
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /s HTTP/1.1\r\nHost: bench\r\n\r\n"); err != nil {
		opened()
		return
	}
	br := bufio.NewReaderSize(conn, 1024)
	signaled := false
	for {
		l, err := br.ReadSlice('\n')
		if err != nil {
			if !signaled {
				opened()
			}
			return
		}
		now := time.Now()
		switch {
		case bytes.HasPrefix(l, []byte(`{"bookmark":`)) && !signaled:
			signaled = true
			opened()
		case bytes.HasPrefix(l, []byte(`{"seq":`)):
			if seq, ts, ok := seqAndTS(l); ok {
				hist.Add(now.Sub(ts))
				total.Add(1)
				last.Store(seq)
			}
		}
	}
}

// BenchmarkCatchUp compares one watcher catching up over EDDY_BENCH_ROWS
// rows (default 1,000,000) through the real HTTP stream with reading the
// same rows straight from the store and encoding them, without HTTP, on
// the driver EDDY_BENCH_DRIVER names (sqlite, the default, or postgres).
func BenchmarkCatchUp(b *testing.B) {
	rows := storetest.BenchRows()
	e := newEnv(b, benchDriver(b).open(b), Options{})
	start := time.Now()
	storetest.Populate(b, e.log, "s", rows)
	b.Logf("populated %d rows in %v", rows, time.Since(start))

	baseline := measure(func() int64 { return readAndEncode(b, e.log, rows) })
	stream := measure(func() int64 { return streamAll(b, e.srv.URL, rows) })
	b.ReportMetric(baseline, "baseline-rows/s")
	b.ReportMetric(stream, "stream-rows/s")
	b.ReportMetric(100*stream/baseline, "%-of-baseline")
}

// benchDriver returns the driver EDDY_BENCH_DRIVER names (sqlite when
// unset).
func benchDriver(b *testing.B) driver {
	b.Helper()
	name := cmp.Or(os.Getenv("EDDY_BENCH_DRIVER"), "sqlite")
	for _, d := range drivers {
		if d.name == name {
			return d
		}
	}
	b.Fatalf("EDDY_BENCH_DRIVER=%q: want sqlite or postgres", name)
	return driver{}
}

func measure(fn func() int64) float64 {
	start := time.Now()
	n := fn()
	return float64(n) / time.Since(start).Seconds()
}

// readAndEncode reads every row with Log.Read pages and encodes it as an
// ndjson line.
func readAndEncode(b *testing.B, lg *changelog.Log, rows int) int64 {
	b.Helper()
	var buf []byte
	var n int64
	for cur := int64(0); cur < int64(rows); {
		page, err := lg.Read(context.Background(), "s", cur, changelog.Filter{}, DefaultCatchUpBatch)
		if err != nil {
			b.Fatal(err)
		}
		buf = buf[:0]
		for i := range page.Rows {
			buf = appendRow(buf, &page.Rows[i])
		}
		n += int64(len(page.Rows))
		cur = page.Cursor
	}
	return n
}

// streamAll watches from 0 over HTTP and reads until the last row.
func streamAll(b *testing.B, url string, rows int) int64 {
	b.Helper()
	res, err := http.Get(url + "/s?from=0")
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	br := bufio.NewReaderSize(res.Body, 64<<10)
	want := []byte(fmt.Sprintf(`{"seq":%d,`, rows))
	var n int64
	for {
		l, err := br.ReadSlice('\n')
		if err != nil {
			b.Fatalf("stream ended after %d rows: %v", n, err)
		}
		if bytes.HasPrefix(l, []byte(`{"seq":`)) {
			n++
			if bytes.HasPrefix(l, want) {
				return n
			}
		}
	}
}

func writeHeapProfile(b *testing.B, path string) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// seqAndTS picks seq and ts out of a row line without decoding it all
// (the line starts {"seq":N,"ts":"…").
func seqAndTS(l []byte) (int64, time.Time, bool) {
	rest := l[len(`{"seq":`):]
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return 0, time.Time{}, false
	}
	seq, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	rest, ok := bytes.CutPrefix(rest[i:], []byte(`,"ts":"`))
	j := bytes.IndexByte(rest, '"')
	if err != nil || !ok || j < 0 {
		return 0, time.Time{}, false
	}
	ts, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	return seq, ts, err == nil
}
