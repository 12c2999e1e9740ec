package logbuf

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuilder is a strings.Builder safe for the flusher goroutine.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
	n  int // writes
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return l.b.Write(p)
}

func (l *lockedBuilder) String() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String(), l.n
}

func TestWriterBatchesWholeLines(t *testing.T) {
	out := &lockedBuilder{}
	w := New(out, 64, time.Hour)
	lines := []string{"a=1\n", "b=22\n", strings.Repeat("c", 70) + "\n", "d\n"}
	for _, l := range lines {
		if _, err := w.Write([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := out.String(); !strings.HasPrefix(strings.Join(lines, ""), s) || (s != "" && !strings.HasSuffix(s, "\n")) {
		t.Fatalf("output before close %q: not whole lines", s)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, n := out.String()
	if s != strings.Join(lines, "") {
		t.Fatalf("output %q", s)
	}
	if n >= len(lines) {
		t.Fatalf("%d writes for %d lines: not batched", n, len(lines))
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestWriterFlushesOnInterval(t *testing.T) {
	out := &lockedBuilder{}
	w := New(out, 4096, time.Millisecond)
	defer w.Close()
	_, _ = w.Write([]byte("x\n"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s, _ := out.String(); s == "x\n" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("not flushed by the interval")
		}
		time.Sleep(time.Millisecond)
	}
}
