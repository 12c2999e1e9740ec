package functions

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 8, 4, 10, 0, 0, 0, time.UTC)
	after := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	tests := []struct {
		name       string
		status     int
		h          http.Header
		err        error
		want       Outcome
		retryAfter time.Duration
	}{
		{"200", 200, nil, nil, Success, 0},
		{"204", 204, nil, nil, Success, 0},
		{"299", 299, nil, nil, Success, 0},
		{"network error", 0, nil, errors.New("connection refused"), Retry, 0},
		{"error wins over status", 200, nil, errors.New("reset"), Retry, 0},
		{"408", 408, nil, nil, Retry, 0},
		{"429", 429, nil, nil, Retry, 0},
		{"429 seconds", 429, after("120"), nil, Retry, 2 * time.Minute},
		{"429 date", 429, after("Tue, 04 Aug 2026 10:00:30 GMT"), nil, Retry, 30 * time.Second},
		{"429 past date", 429, after("Tue, 04 Aug 2026 09:00:00 GMT"), nil, Retry, 0},
		{"429 capped", 429, after("999999"), nil, Retry, MaxRetryAfter},
		{"429 malformed", 429, after("soon"), nil, Retry, 0},
		{"429 negative", 429, after("-5"), nil, Retry, 0},
		{"500", 500, nil, nil, Retry, 0},
		{"503 seconds", 503, after("7"), nil, Retry, 7 * time.Second},
		{"599", 599, nil, nil, Retry, 0},
		{"400", 400, nil, nil, Fail, 0},
		{"401", 401, nil, nil, Fail, 0},
		{"404", 404, nil, nil, Fail, 0},
		{"409", 409, after("5"), nil, Fail, 0},
		{"422", 422, nil, nil, Fail, 0},
		{"301 not followed", 301, nil, nil, Fail, 0},
		{"100", 100, nil, nil, Fail, 0},
		{"no status", 0, nil, nil, Fail, 0},
	}
	for _, tt := range tests {
		d := ClassifyAt(tt.status, tt.h, tt.err, now)
		if d.Outcome != tt.want || d.RetryAfter != tt.retryAfter || d.Reason == "" {
			t.Errorf("%s: got %+v, want %v after %v", tt.name, d, tt.want, tt.retryAfter)
		}
	}
	if d := Classify(503, after("1"), nil); d.Outcome != Retry || d.RetryAfter != time.Second {
		t.Errorf("Classify = %+v", d)
	}
}

// fixedRand returns n-1 (the largest draw) or 0.
type fixedRand struct{ top bool }

func (r fixedRand) Int64N(n int64) int64 {
	if r.top {
		return n - 1
	}
	return 0
}

func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	const initial, limit = time.Second, 5 * time.Minute
	tests := []struct {
		attempt int
		nominal time.Duration
	}{
		{0, time.Second}, {1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second},
		{9, 256 * time.Second}, {10, limit}, {100, limit}, {1 << 30, limit},
	}
	for _, tt := range tests {
		lo := Backoff(tt.attempt, initial, limit, fixedRand{})
		hi := Backoff(tt.attempt, initial, limit, fixedRand{top: true})
		if lo != tt.nominal-tt.nominal/2 || hi != tt.nominal {
			t.Errorf("attempt %d: range [%v, %v], want [%v, %v]", tt.attempt, lo, hi, tt.nominal-tt.nominal/2, tt.nominal)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for attempt := 1; attempt < 80; attempt++ {
		for _, src := range []Rand{r, nil} {
			d := Backoff(attempt, initial, limit, src)
			if d < initial/2 || d > limit {
				t.Fatalf("attempt %d: %v out of bounds", attempt, d)
			}
		}
	}
}

func TestBackoffEdges(t *testing.T) {
	t.Parallel()
	if d := Backoff(3, 0, time.Minute, nil); d != 0 {
		t.Errorf("zero initial: %v", d)
	}
	if d := Backoff(5, time.Minute, time.Second, fixedRand{top: true}); d != time.Minute {
		t.Errorf("limit below initial: %v", d)
	}
	huge := time.Duration(1 << 62)
	if d := Backoff(5, huge, 1<<63-1, fixedRand{top: true}); d != 1<<63-1 {
		t.Errorf("overflow: %v", d)
	}
}

func TestDecisionDelay(t *testing.T) {
	t.Parallel()
	top := fixedRand{top: true}
	tests := []struct {
		d    Decision
		want time.Duration
	}{
		{Decision{Outcome: Retry}, 4 * time.Second},
		{Decision{Outcome: Retry, RetryAfter: time.Second}, 4 * time.Second},
		{Decision{Outcome: Retry, RetryAfter: time.Minute}, time.Minute},
	}
	for _, tt := range tests {
		if got := tt.d.Delay(3, time.Second, time.Hour, top); got != tt.want {
			t.Errorf("%+v: Delay = %v, want %v", tt.d, got, tt.want)
		}
	}
}

func TestOutcomeText(t *testing.T) {
	t.Parallel()
	for _, o := range []Outcome{Success, Retry, Fail} {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var back Outcome
		if err := json.Unmarshal(b, &back); err != nil || back != o {
			t.Errorf("%v: round trip gave %v, %v", o, back, err)
		}
	}
	if _, err := json.Marshal(Outcome(0)); err == nil {
		t.Error("marshalled the zero outcome")
	}
	var o Outcome
	if err := json.Unmarshal([]byte(`"maybe"`), &o); err == nil {
		t.Error("unmarshalled an unknown outcome")
	}
	if Outcome(9).String() != "outcome(9)" || Retry.String() != "retry" {
		t.Errorf("String: %v %v", Outcome(9), Retry)
	}
}
