package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws a one-line progress bar on a terminal: how much of the
// seq range from the head down to where the walk stops has been
// scanned, and how many rows were exported. A nil *progress draws
// nothing.
type progress struct {
	w     io.Writer
	from  int64 // the head the walk started at
	to    int64 // the lowest seq it may reach
	every time.Duration
	last  time.Time
}

// newProgress returns a bar on w when mode asks for one: "always", or
// "auto" when w is a terminal; nil otherwise.
func newProgress(mode string, w io.Writer, from, to int64) (*progress, error) {
	switch mode {
	case "never":
		return nil, nil
	case "auto":
		if !isTerminal(w) {
			return nil, nil
		}
	case "always":
	default:
		return nil, fmt.Errorf("--progress %q: want auto, always or never", mode)
	}
	return &progress{w: w, from: from, to: to, every: 100 * time.Millisecond}, nil
}

// isTerminal reports whether w is a character device.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

const barWidth = 30

// update redraws the bar (at most every 100ms) with the walk at seq
// cursor and rows exported.
func (p *progress) update(cursor int64, rows int) {
	if p == nil || time.Since(p.last) < p.every {
		return
	}
	p.last = time.Now()
	p.draw(cursor, rows)
}

// done draws the full bar with the walk stopped at seq cursor and ends
// its line.
func (p *progress) done(cursor int64, rows int) {
	if p == nil {
		return
	}
	p.to = cursor
	p.draw(cursor, rows)
	fmt.Fprintln(p.w)
}

func (p *progress) draw(cursor int64, rows int) {
	frac := 1.0
	if span := p.from - p.to; span > 0 {
		frac = min(max(float64(p.from-cursor)/float64(span), 0), 1)
	}
	n := int(frac * barWidth)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%%  seq %d  %d rows", strings.Repeat("#", n), strings.Repeat("-", barWidth-n), 100*frac, cursor, rows)
}
