package functions

import (
	"strconv"
	"testing"
	"time"
)

// FuzzParseRetryAfter checks that any header value either is refused or
// yields a wait between 0 and MaxRetryAfter, exactly the seconds named
// when it is a small non-negative integer.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "1", " 120 ", "-1", "99999999999999999999", "Wed, 21 Oct 2015 07:28:00 GMT",
		"Mon, 02 Jan 2006 15:04:05 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "", "x", "1.5"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseRetryAfter(v, now)
		if !ok {
			if d != 0 {
				t.Fatalf("%q refused with a wait %v", v, d)
			}
			return
		}
		if d < 0 || d > MaxRetryAfter {
			t.Fatalf("%q: wait %v outside 0..%v", v, d, MaxRetryAfter)
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && time.Duration(n) < MaxRetryAfter/time.Second {
			if d != time.Duration(n)*time.Second {
				t.Fatalf("%q: wait %v, want %ds", v, d, n)
			}
		}
	})
}
