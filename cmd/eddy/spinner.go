package main

import (
	"fmt"
	"io"
)

// spinnerFrames are the frames of a spinner, one per update.
var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// spinner shows that a walk is still scanning: one line on stderr,
// rewritten in place at each update, only when stderr is a terminal.
// It has no goroutine of its own: each show advances it by a frame.
type spinner struct {
	w     io.Writer
	live  bool
	frame int
	shown bool
}

// newSpinner returns a spinner on stderr (silent unless a terminal).
func (a *app) newSpinner() *spinner {
	return &spinner{w: a.stderr, live: isTerminal(a.stderr)}
}

// show displays msg after the next frame.
func (s *spinner) show(msg string) {
	if !s.live {
		return
	}
	fmt.Fprintf(s.w, "\r\x1b[K%s %s", spinnerFrames[s.frame%len(spinnerFrames)], msg)
	s.frame++
	s.shown = true
}

// stop clears the spinner's line.
func (s *spinner) stop() {
	if s.shown {
		fmt.Fprint(s.w, "\r\x1b[K")
		s.shown = false
	}
}
