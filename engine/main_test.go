package engine_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine running: an
// engine that stopped leaves none.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
