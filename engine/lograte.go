package engine

import (
	"sync"
	"time"

	"github.com/eddy-run/eddy/store"
)

// deliveryLogEvery is the least interval between two log lines of one
// trigger about failed (or about retrying) deliveries; the lines in
// between are counted and the next line says how many were suppressed.
var deliveryLogEvery = 10 * time.Second

// logLimiter rate-limits log lines by key.
type logLimiter struct {
	mu      sync.Mutex
	last    map[string]time.Time // guarded by mu
	dropped map[string]int       // guarded by mu
}

// allow reports whether a line under key may be written at now, and how
// many were suppressed since the last one written.
func (l *logLimiter) allow(key string, now time.Time, every time.Duration) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last, l.dropped = map[string]time.Time{}, map[string]int{}
	}
	if t, ok := l.last[key]; ok && now.Sub(t) < every {
		l.dropped[key]++
		return false, 0
	}
	n := l.dropped[key]
	l.last[key] = now
	delete(l.dropped, key)
	return true, n
}

// logOutcome logs a delivery attempt that ended retrying or failed,
// with its trigger, delivery id and reason, at most once per
// deliveryLogEvery per trigger and outcome.
func (e *Engine) logOutcome(space string, d store.Delivery) {
	if d.Status != store.DeliveryRetrying && d.Status != store.DeliveryFailed {
		return
	}
	ok, suppressed := e.logRate.allow(space+"\x00"+d.Trigger+"\x00"+string(d.Status), time.Now(), deliveryLogEvery)
	if !ok {
		return
	}
	args := []any{"space", space, "trigger", d.Trigger, "delivery", d.ID, "attempts", d.Attempts, "reason", d.LastError}
	if d.Status == store.DeliveryRetrying {
		args = append(args, "next", d.NextAttemptAt)
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	e.logger.Warn("engine: delivery "+string(d.Status), args...)
}
