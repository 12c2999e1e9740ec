package watch

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/eddy-run/eddy/internal/benchproc"
)

// BenchmarkFanOutBurst opens EDDY_BENCH_BURST_WATCHERS (default 200)
// streams on one space in this process, then per op commits a burst of
// EDDY_BENCH_BURST (default 32) commits from 8 writers at once and waits
// until every watcher has the burst's last row. It reports the server's
// writes (HTTP chunks) per watcher per burst besides the time per burst.
func BenchmarkFanOutBurst(b *testing.B) {
	n := benchproc.EnvInt("EDDY_BENCH_BURST_WATCHERS", 200)
	burst := benchproc.EnvInt("EDDY_BENCH_BURST", 32)
	const writers = 8
	e := newEnv(b, drivers[0].open(b), Options{})
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	var (
		chunks atomic.Int64
		want   atomic.Int64
		opened sync.WaitGroup
		done   sync.WaitGroup
		mu     sync.Mutex
	)
	reached := sync.NewCond(&mu)
	want.Store(1 << 62)
	lasts := make([]atomic.Int64, n)
	opened.Add(n)
	conns := make([]net.Conn, n)
	for i := range conns {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = conn
		done.Go(func() {
			countStream(conn, &chunks, opened.Done, func(seq int64) {
				lasts[i].Store(seq)
				if seq >= want.Load() {
					mu.Lock()
					reached.Broadcast()
					mu.Unlock()
				}
			})
		})
	}
	opened.Wait()
	all := func(w int64) bool {
		for i := range lasts {
			if lasts[i].Load() < w {
				return false
			}
		}
		return true
	}
	chunks.Store(0)
	for b.Loop() {
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				for range burst / writers {
					e.write("task", 1)
				}
			})
		}
		wg.Wait()
		head, err := e.log.Space(b.Context(), "s")
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		want.Store(head.Head)
		for !all(head.Head) {
			reached.Wait()
		}
		mu.Unlock()
	}
	b.ReportMetric(float64(chunks.Load())/float64(b.N)/float64(n), "writes/watcher/burst")
	for _, c := range conns {
		c.Close()
	}
	done.Wait()
}

// countStream reads a raw watch stream on conn, counting the HTTP chunks
// after the opening bookmark and passing every row's seq to row.
func countStream(conn net.Conn, chunks *atomic.Int64, opened func(), row func(seq int64)) {
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /s HTTP/1.1\r\nHost: bench\r\n\r\n")); err != nil {
		opened()
		return
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	signaled := false
	for {
		l, err := br.ReadSlice('\n')
		if err != nil {
			if !signaled {
				opened()
			}
			return
		}
		switch {
		case len(l) == 2 && l[0] == '\r': // the end of a chunk
			if signaled {
				chunks.Add(1)
			}
		case bytes.HasPrefix(l, []byte(`{"bookmark":`)) && !signaled:
			signaled = true
			opened()
		case bytes.HasPrefix(l, []byte(`{"seq":`)):
			if seq, _, ok := seqAndTS(l); ok {
				row(seq)
			}
		}
	}
}
