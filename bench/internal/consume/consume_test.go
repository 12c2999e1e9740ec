package consume

import (
	"testing"
	"time"
)

func TestSpreadGivesTheTail(t *testing.T) {
	t.Parallel()
	ds := make([]time.Duration, 1000)
	for i := range ds { // 1 to 1,000 ms, shuffled (7919 is prime to 1,000)
		ds[i] = time.Duration(i*7919%1000+1) * time.Millisecond
	}
	if got, want := spread(ds), "900 / 990 / 999 / 1,000"; got != want {
		t.Fatalf("spread = %q; want %q", got, want)
	}
}
