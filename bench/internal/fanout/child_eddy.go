package fanout

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/eddy-run/eddy/bench/internal/harness"
)

// openEddy opens one watch stream per watcher over its own connection,
// 100 being opened at a time, and returns once each has its opening
// bookmark. stop closes them all.
func openEddy(addr, token string, w *watchers) (func(), error) {
	req := "GET " + harness.WatchPath(-1) + " HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer " + token + "\r\n\r\n"
	conns := make([]net.Conn, len(w.last))
	var ready, wg sync.WaitGroup
	sem := make(chan struct{}, 100)
	ready.Add(len(conns))
	for i := range conns {
		sem <- struct{}{}
		c, err := net.Dial("tcp", addr) //nolint:noctx // the child process is the context: its parent ends it
		if err != nil {
			return nil, fmt.Errorf("dial watcher %d: %w", i, err)
		}
		conns[i] = c
		wg.Go(func() { readStream(c, req, i, w, func() { <-sem; ready.Done() }) })
	}
	ready.Wait()
	return func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}, nil
}

// readStream sends the watch request on c and records every row line
// (other lines, HTTP headers and chunk sizes, are skipped). opened is
// called once, at the bookmark or when the stream fails.
func readStream(c net.Conn, req string, i int, w *watchers, opened func()) {
	signaled := false
	signal := func() {
		if !signaled {
			signaled = true
			opened()
		}
	}
	defer signal()
	if _, err := io.WriteString(c, req); err != nil {
		return
	}
	br := bufio.NewReaderSize(c, 1024)
	for {
		l, err := br.ReadSlice('\n')
		if err != nil {
			return
		}
		switch {
		case bytes.HasPrefix(l, []byte(`{"bookmark":`)):
			signal()
		case bytes.HasPrefix(l, []byte(`{"seq":`)):
			rest := l[len(`{"seq":`):]
			if j := bytes.IndexByte(rest, ','); j > 0 {
				if seq, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
					w.add(i, seq)
				}
			}
		}
	}
}
