package consume

import (
	"testing"
	"time"
)

func TestSpreadGivesTheTail(t *testing.T) {
	t.Parallel()
	var ds []time.Duration
	for i := 1000; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if got, want := spread(ds), "900 / 990 / 999 / 1,000"; got != want {
		t.Fatalf("spread = %q; want %q", got, want)
	}
}
