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
	w        http.ResponseWriter
	rc       *http.ResponseController
	deadline writeDeadline
}

func (s *responseSink) write(b []byte) error {
	if t, ok := s.deadline.next(time.Now()); ok {
		_ = s.rc.SetWriteDeadline(t)
	}
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

	deadline writeDeadline
}

// writeDeadline spares a stream a deadline update (a runtime timer
// change, the costliest part of a small write) per write: the deadline is
// moved only once a quarter of WriteTimeout has passed since it was last
// set, so every write still has at least three quarters of WriteTimeout.
type writeDeadline struct{ set time.Time }

// next returns the deadline to set for a write at now, or false when the
// current one still leaves enough time.
func (d *writeDeadline) next(now time.Time) (time.Time, bool) {
	if !d.set.IsZero() && now.Sub(d.set) < WriteTimeout/4 {
		return time.Time{}, false
	}
	d.set = now
	return now.Add(WriteTimeout), true
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
	if t, ok := s.deadline.next(time.Now()); ok {
		_ = s.conn.SetWriteDeadline(t)
	}
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
