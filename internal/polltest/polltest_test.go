package polltest_test

import (
	"sync/atomic"
	"testing"

	"github.com/eddy-run/eddy/internal/polltest"
)

func TestUntil(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	polltest.Until(t, "three checks", func() bool { return n.Add(1) == 3 })
	if n.Load() != 3 {
		t.Fatalf("checked %d times", n.Load())
	}
}
