package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// MaxFrameBytes bounds one ndjson line of a stream.
const MaxFrameBytes = 16 << 20

// errHeaderTimeout is a stream whose answer did not start in time.
var errHeaderTimeout = errors.New("client: no answer from the server")

// streamTimeouts bound one ndjson stream: the wait for its answer and the
// silence between two lines (0: unbounded).
type streamTimeouts struct {
	header time.Duration
	idle   time.Duration
}

// stream is one open ndjson answer, read line by line in the caller's
// goroutine. It is not safe for concurrent use, except close.
type stream struct {
	resp   *http.Response
	br     *bufio.Reader
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration
	timer  *time.Timer // cancels the stream with ErrIdle; nil when idle is 0
}

// openStream sends the GET cl for an ndjson stream and returns it once
// the server answered 200; any other answer is its *Error (classified
// with cl.from). Calls are never retried here: resuming is the caller's.
func (c *Client) openStream(ctx context.Context, cl call, t streamTimeouts) (*stream, error) {
	sctx, cancel := context.WithCancelCause(ctx)
	req, err := c.request(sctx, http.MethodGet, cl.path, cl.query, nil)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	req.Header.Set("Accept", "application/x-ndjson")
	var headerTimer *time.Timer
	if t.header > 0 {
		headerTimer = time.AfterFunc(t.header, func() { cancel(errHeaderTimeout) })
	}
	resp, err := c.hc.Do(req)
	if headerTimer != nil {
		headerTimer.Stop()
	}
	if err != nil {
		cause := context.Cause(sctx)
		cancel(nil)
		if errors.Is(cause, errHeaderTimeout) {
			return nil, fmt.Errorf("GET %s: %w within %v", cl.path, errHeaderTimeout, t.header)
		}
		return nil, fmt.Errorf("GET %s: %w", cl.path, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel(nil)
		defer resp.Body.Close()
		body, _ := readBody(resp.Body, maxProblemBytes)
		return nil, classify(problemOf(resp.StatusCode, resp.Header, body), cl.from)
	}
	s := &stream{resp: resp, br: bufio.NewReaderSize(resp.Body, 64<<10), ctx: sctx, cancel: cancel, idle: t.idle}
	if t.idle > 0 {
		s.timer = time.AfterFunc(t.idle, func() { cancel(ErrIdle) })
	}
	return s, nil
}

// line returns the next complete line (without its newline). A line cut
// off by the end of the stream is never returned. The error says how
// the stream ended: ErrIdle, ErrStreamEnded, or the read error.
func (s *stream) line() ([]byte, error) {
	var long []byte
	for {
		chunk, err := s.br.ReadSlice('\n')
		if err == nil {
			s.touch()
			if long != nil {
				return bytes.TrimSuffix(append(long, chunk...), []byte("\n")), nil
			}
			return bytes.TrimSuffix(chunk, []byte("\n")), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, s.ended(err)
		}
		long = append(long, chunk...)
		if len(long) > MaxFrameBytes {
			return nil, ErrFrameTooLong
		}
	}
}

// touch restarts the idle timer after data arrived.
func (s *stream) touch() {
	if s.timer != nil {
		s.timer.Reset(s.idle)
	}
}

// ended names why reading stopped.
func (s *stream) ended(err error) error {
	if cause := context.Cause(s.ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		if errors.Is(cause, ErrIdle) {
			return fmt.Errorf("%w for %v", ErrIdle, s.idle)
		}
		return cause
	}
	if errors.Is(err, io.EOF) {
		return ErrStreamEnded
	}
	return err
}

// close ends the stream and releases its connection.
func (s *stream) close() {
	if s.timer != nil {
		s.timer.Stop()
	}
	s.cancel(nil)
	_ = s.resp.Body.Close()
}
