package watch

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"time"
)

// sink is where a stream's lines go: write sends one batch of lines and
// flushes it, within the sink's write timeout; abort follows a write
// that ran out of it with a last frame, if the client takes it within a
// short grace; close ends the response.
type sink interface {
	write(b []byte) error
	abort(frame []byte)
	close()
}

// abortGrace bounds the last attempt to reach a stalled client.
const abortGrace = 2 * time.Second

// responseSink writes through the http.ResponseWriter (HTTP/2, or when
// the connection cannot be taken over).
type responseSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	// deadline is the write deadline last set.
	deadline writeDeadline
}

func newResponseSink(w http.ResponseWriter, timeout time.Duration) *responseSink {
	return &responseSink{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

func (s *responseSink) write(b []byte) error {
	if t, ok := s.deadline.next(time.Now(), s.timeout); ok {
		_ = s.rc.SetWriteDeadline(t)
	}
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// abort cannot add to a response whose write timed out: net/http has
// given the connection up.
func (s *responseSink) abort([]byte) {}

func (s *responseSink) close() { _ = s.rc.SetWriteDeadline(time.Time{}) }

// connSink writes HTTP/1.1 chunks straight to a hijacked connection. A
// long-lived stream then holds neither net/http's connection goroutine
// and buffers nor its background reader: an idle watcher costs little
// more than its own goroutine. A client that goes away is noticed at the
// next write (at the latest the next heartbeat).
type connSink struct {
	conn    net.Conn
	timeout time.Duration
	head    []byte      // the response head, sent with the first chunk
	size    []byte      // scratch for a chunk-size line
	pending net.Buffers // what a timed-out or direct write left unsent
	ended   bool        // the last chunk went out (abort)
	// now writes to the socket without waiting (directWriter); nil when
	// the connection has no descriptor.
	now func(b []byte) (int, error)

	deadline writeDeadline // the write deadline last set
}

// writeDeadline spares a stream a deadline update (a runtime timer
// change, the costliest part of a small write) per write: the deadline is
// moved only once a quarter of the write timeout has passed since it was
// last set, so every write still has at least three quarters of it.
type writeDeadline struct{ set time.Time }

// next returns the deadline to set for a write at now under timeout, or
// false when the current one still leaves enough time.
func (d *writeDeadline) next(now time.Time, timeout time.Duration) (time.Time, bool) {
	if !d.set.IsZero() && now.Sub(d.set) < timeout/4 {
		return time.Time{}, false
	}
	d.set = now
	return now.Add(timeout), true
}

var crlf = []byte("\r\n")

// hijack takes over an HTTP/1.1 connection and returns a sink that
// answers 200 with w's headers and a chunked body; false when Takeover is
// off or w cannot be hijacked (HTTP/2, a test recorder).
func hijack(w http.ResponseWriter, r *http.Request, takeover bool, timeout time.Duration) (*connSink, bool) {
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
	return &connSink{conn: conn, timeout: timeout, head: head.Bytes(), now: directWriter(conn)}, true
}

// write sends what a direct write left unsent, then b as a chunk (none
// when b is empty).
func (s *connSink) write(b []byte) error {
	bufs := s.pending
	s.pending = nil
	if len(b) > 0 {
		bufs = append(bufs, s.chunk(b)...)
		s.head = nil
	}
	if t, ok := s.deadline.next(time.Now(), s.timeout); ok {
		_ = s.conn.SetWriteDeadline(t)
	}
	_, err := bufs.WriteTo(s.conn)
	if err != nil {
		s.pending = bufs
	}
	return err
}

// writeNow writes frame (whole chunks) without waiting and reports
// whether the socket took all of it; what it did not take is kept for
// the next write or abort, which go through the stream's goroutine under
// the write timeout. It needs s.now, and the head sent.
func (s *connSink) writeNow(frame []byte) bool {
	n, err := s.now(frame)
	if err == nil && n == len(frame) {
		return true
	}
	s.pending = net.Buffers{bytes.Clone(frame[n:])}
	return false
}

// idle clears the write deadline before direct writes resume: they do
// not move it, and the runtime would refuse them once it passed.
func (s *connSink) idle() {
	if !s.deadline.set.IsZero() {
		_ = s.conn.SetWriteDeadline(time.Time{})
		s.deadline.set = time.Time{}
	}
}

// appendChunk appends body as one HTTP/1.1 chunk.
func appendChunk(b, body []byte) []byte {
	b = strconv.AppendInt(b, int64(len(body)), 16)
	b = append(b, crlf...)
	b = append(b, body...)
	return append(b, crlf...)
}

// chunk frames b as one HTTP/1.1 chunk, after the head if it is unsent.
func (s *connSink) chunk(b []byte) net.Buffers {
	s.size = strconv.AppendInt(s.size[:0], int64(len(b)), 16)
	s.size = append(s.size, crlf...)
	return net.Buffers{s.head, s.size, b, crlf}
}

// abort sends what the timed-out write left, then frame as a chunk of
// its own and the last chunk, within abortGrace: a client that was only
// slow reads the frame, one that is gone costs no longer.
func (s *connSink) abort(frame []byte) {
	// A fresh size line: the pending one may still use s.size.
	size := append(strconv.AppendInt(nil, int64(len(frame)), 16), crlf...)
	bufs := s.pending // taken over: the sink ends here
	s.pending = nil
	bufs = append(bufs, size, frame, []byte("\r\n0\r\n\r\n"))
	_ = s.conn.SetWriteDeadline(time.Now().Add(abortGrace))
	_, _ = bufs.WriteTo(s.conn)
	s.ended = true
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
	if s.head == nil && !s.ended && s.pending == nil {
		_ = s.conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = s.conn.Write([]byte("0\r\n\r\n"))
	}
	_ = s.conn.Close()
}
