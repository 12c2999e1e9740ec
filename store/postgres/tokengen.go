package postgres

import (
	"sync"
	"time"
)

// TokenChannel is the channel a token revocation notifies, inside its
// transaction, with an empty payload.
const TokenChannel = "eddy_tokens"

// tokenGenerationMaxAge bounds how long TokenGeneration trusts a
// generation it read while a listener was up: a notification lost
// without a reconnect costs at most this long. Tests shrink it.
var tokenGenerationMaxAge = time.Second

// tokenGeneration answers TokenGeneration from memory while a Listen
// connection hears TokenChannel: a revocation's notification (or a
// listener's connect or loss) invalidates the generation read last, and
// the next request reads it again. With no listener every request
// reads the database.
type tokenGeneration struct {
	mu        sync.Mutex
	listeners int       // connections listening on TokenChannel
	epoch     uint64    // moves on every invalidation
	valid     bool      // gen is current
	gen       int64     // the generation read last
	readAt    time.Time // when gen was read
}

// cached returns the current generation if it is known, and otherwise
// the epoch to pass to store after reading it.
func (t *tokenGeneration) cached() (gen int64, epoch uint64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.valid && t.listeners > 0 && time.Since(t.readAt) < tokenGenerationMaxAge {
		return t.gen, 0, true
	}
	return 0, t.epoch, false
}

// store keeps gen, read after cached returned epoch, unless it was
// invalidated meanwhile or no listener hears revocations.
func (t *tokenGeneration) store(epoch uint64, gen int64, readAt time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if epoch == t.epoch && t.listeners > 0 {
		t.gen, t.valid, t.readAt = gen, true, readAt
	}
}

// invalidate forgets the generation and changes the count of listeners
// by delta.
func (t *tokenGeneration) invalidate(delta int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.listeners += delta
	t.epoch++
	t.valid = false
}
