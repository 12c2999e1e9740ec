// Package logbuf batches log output: one write per batch of lines, not
// one per line. The access log writes a line per request; unbuffered, each
// is a write system call on the request's path.
package logbuf

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Writer buffers whole writes (slog handlers write one record per call)
// and writes them out when the buffer fills, every interval, and on Flush
// and Close. A write of a record at WARN or above should be followed by
// Flush by the caller if it must be out at once; Writer itself never
// splits a record.
type Writer struct {
	mu   sync.Mutex
	buf  *bufio.Writer // guarded by mu
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// New returns a Writer over w flushing at least every interval. Close it
// to stop its flusher and write out what is buffered.
func New(w io.Writer, size int, interval time.Duration) *Writer {
	bw := &Writer{buf: bufio.NewWriterSize(w, size), stop: make(chan struct{}), done: make(chan struct{})}
	go bw.flusher(interval)
	return bw
}

// Write buffers p, writing out the buffer first when p does not fit.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(p) > w.buf.Available() && w.buf.Buffered() > 0 {
		if err := w.buf.Flush(); err != nil {
			return 0, err
		}
	}
	return w.buf.Write(p)
}

// Flush writes out what is buffered.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Flush()
}

// Close stops the flusher and flushes. It is idempotent.
func (w *Writer) Close() error {
	w.once.Do(func() { close(w.stop) })
	<-w.done
	return w.Flush()
}

func (w *Writer) flusher(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			_ = w.Flush()
		}
	}
}

// Handler wraps a slog.Handler writing to w: records at WARN and above
// flush w at once, so errors are never held back; INFO lines (the access
// log) go out in batches.
type Handler struct {
	slog.Handler
	w *Writer
}

// NewHandler returns h flushing w after every record at WARN or above.
func NewHandler(h slog.Handler, w *Writer) *Handler { return &Handler{Handler: h, w: w} }

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		return errors.Join(err, h.w.Flush())
	}
	return err
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{Handler: h.Handler.WithAttrs(attrs), w: h.w}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{Handler: h.Handler.WithGroup(name), w: h.w}
}
