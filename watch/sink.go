package watch

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"time"
)

// sink is where a stream's lines go: write sends one batch of lines and
// flushes it; close ends the response.
type sink interface {
	write(b []byte) error
	close()
}

// responseSink writes through the http.ResponseWriter (HTTP/2, or when
// the connection cannot be taken over).
type responseSink struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s *responseSink) write(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(WriteTimeout))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *responseSink) close() { _ = s.rc.SetWriteDeadline(time.Time{}) }

// connSink writes HTTP/1.1 chunks straight to a hijacked connection. A
// long-lived stream then holds neither net/http's connection goroutine
// and buffers nor its background reader: an idle watcher costs little
// more than its own goroutine. A client that goes away is noticed at the
// next write (at the latest the next heartbeat).
type connSink struct {
	conn net.Conn
	head []byte // the response head, sent with the first chunk
	size []byte // scratch for a chunk-size line
}

var crlf = []byte("\r\n")

// hijack takes over an HTTP/1.1 connection and returns a sink that
// answers 200 with w's headers and a chunked body; false when Takeover is
// off or w cannot be hijacked (HTTP/2, a test recorder).
func hijack(w http.ResponseWriter, r *http.Request, takeover bool) (*connSink, bool) {
	if !takeover || r.ProtoMajor != 1 || r.ProtoMinor < 1 {
		return nil, false
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, false
	}
	_ = conn.SetDeadline(time.Time{})
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	h := w.Header().Clone()
	h.Set("Transfer-Encoding", "chunked")
	h.Set("Connection", "close")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	_ = h.Write(&head)
	head.WriteString("\r\n")
	return &connSink{conn: conn, head: head.Bytes()}, true
}

func (s *connSink) write(b []byte) error {
	s.size = strconv.AppendInt(s.size[:0], int64(len(b)), 16)
	s.size = append(s.size, crlf...)
	bufs := net.Buffers{s.head, s.size, b, crlf}
	s.head = nil
	_ = s.conn.SetWriteDeadline(time.Now().Add(WriteTimeout))
	_, err := bufs.WriteTo(s.conn)
	return err
}

// watchClose calls gone when the client closes its end of the
// connection (or sends anything: a streaming request has nothing more to
// say), or when close closes it.
func (s *connSink) watchClose(gone func()) {
	var b [1]byte
	_, _ = s.conn.Read(b[:])
	gone()
}

// close sends the last chunk and closes the connection.
func (s *connSink) close() {
	if s.head == nil {
		_ = s.conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = s.conn.Write([]byte("0\r\n\r\n"))
	}
	_ = s.conn.Close()
}
