// Package polltest is the one poll-until helper of eddy's tests: where a
// test waits for a state another goroutine or process reaches, and no
// signal tells it when, it polls a condition until it holds, failing the
// test after a timeout instead of sleeping a guessed interval.
package polltest

import (
	"testing"
	"time"
)

// Defaults of Until.
const (
	// Timeout is how long Until waits before failing the test.
	Timeout = 10 * time.Second
	// Interval is how often Until checks the condition.
	Interval = 10 * time.Millisecond
)

// Until checks cond every Interval until it holds, failing the test
// (naming what it waited for) after Timeout or when the test's context
// ends.
func Until(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	Within(tb, Timeout, what, cond)
}

// Within is Until with another timeout.
func Within(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		select {
		case <-tb.Context().Done():
			tb.Fatalf("waiting for %s: %v", what, tb.Context().Err())
		case <-tick.C:
		}
	}
}
