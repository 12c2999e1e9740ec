package functions

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxRetryAfter caps the wait a Retry-After header can ask for.
var MaxRetryAfter = time.Hour

// Outcome is what a delivery attempt's answer means.
type Outcome int

// Outcomes of an attempt.
const (
	// Success: a 2xx answer; the delivery is done.
	Success Outcome = iota + 1
	// Retry: 408, 429, 5xx or a transport error; try again later.
	Retry
	// Fail: any other answer; the delivery fails at once.
	Fail
)

var outcomeNames = map[Outcome]string{Success: "success", Retry: "retry", Fail: "fail"}

// String returns "success", "retry" or "fail".
func (o Outcome) String() string {
	if s, ok := outcomeNames[o]; ok {
		return s
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// MarshalText implements encoding.TextMarshaler.
func (o Outcome) MarshalText() ([]byte, error) {
	if _, ok := outcomeNames[o]; !ok {
		return nil, fmt.Errorf("invalid outcome %d", int(o))
	}
	return []byte(o.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *Outcome) UnmarshalText(b []byte) error {
	for k, v := range outcomeNames {
		if v == string(b) {
			*o = k
			return nil
		}
	}
	return fmt.Errorf("invalid outcome %q", b)
}

// Decision is how to treat a delivery attempt's answer.
type Decision struct {
	Outcome Outcome
	// RetryAfter is the wait the answer asked for (Retry-After), at most
	// MaxRetryAfter; zero if none.
	RetryAfter time.Duration
	// Reason describes the answer for a delivery's lastError.
	Reason string
}

// Classify decides what a webhook answer means, as of now; see ClassifyAt.
func Classify(status int, h http.Header, err error) Decision {
	return ClassifyAt(status, h, err, time.Now())
}

// ClassifyAt decides what a webhook answer means: a transport error (err
// non-nil: refused connection, timeout, reset) retries; 2xx succeeds; 408,
// 429 and 5xx retry, honouring a Retry-After header (seconds or an HTTP
// date, taken relative to now); anything else (other 4xx, and 1xx or 3xx,
// since redirects are not followed) fails at once.
func ClassifyAt(status int, h http.Header, err error, now time.Time) Decision {
	if err != nil {
		return Decision{Outcome: Retry, Reason: "request failed: " + err.Error()}
	}
	reason := fmt.Sprintf("HTTP %d", status)
	if text := http.StatusText(status); text != "" {
		reason += " " + text
	}
	switch {
	case status >= 200 && status < 300:
		return Decision{Outcome: Success, Reason: reason}
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500 && status < 600:
		d := Decision{Outcome: Retry, Reason: reason}
		if h != nil {
			d.RetryAfter, _ = ParseRetryAfter(h.Get("Retry-After"), now)
		}
		return d
	}
	return Decision{Outcome: Fail, Reason: reason}
}

// ParseRetryAfter parses a Retry-After value, delay-seconds or an HTTP
// date, into a wait from now, capped at MaxRetryAfter. A date in the past
// is a zero wait; ok is false for an empty or malformed value.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), MaxRetryAfter), true
}

// Rand is the randomness Backoff draws from; *rand.Rand of math/rand/v2
// implements it.
type Rand interface {
	// Int64N returns a number in [0, n).
	Int64N(n int64) int64
}

// Backoff returns the wait before retry number attempt (1 for the first
// retry): exponential from initial, doubling each attempt, capped at limit,
// with equal jitter (uniform in [d/2, d]), so retries of many deliveries
// spread out yet never come sooner than half the nominal wait. r may be
// nil for the global source. A non-positive initial yields 0.
func Backoff(attempt int, initial, limit time.Duration, r Rand) time.Duration {
	if initial <= 0 {
		return 0
	}
	limit = max(limit, initial)
	d := initial
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
		if d <= 0 { // overflow
			d = limit
		}
	}
	d = min(d, limit)
	half := d / 2
	return d - half + randN(r, int64(half)+1)
}

func randN(r Rand, n int64) time.Duration {
	if r == nil {
		return time.Duration(rand.Int64N(n))
	}
	return time.Duration(r.Int64N(n))
}

// Delay returns the wait before retry number attempt after this decision:
// Backoff, or the answer's Retry-After when that is longer.
func (d Decision) Delay(attempt int, initial, limit time.Duration, r Rand) time.Duration {
	return max(Backoff(attempt, initial, limit, r), d.RetryAfter)
}
