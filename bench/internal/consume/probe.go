package consume

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// probe records when message i was sent, when its send returned and when
// its consumer started on it, in Unix nanoseconds.
type probe struct {
	sent, acked, got []atomic.Int64
	warm             int
}

// newProbe is a probe for warm warm-up messages followed by n measured
// ones.
func newProbe(warm, n int) *probe {
	return &probe{sent: make([]atomic.Int64, warm+n), acked: make([]atomic.Int64, warm+n), got: make([]atomic.Int64, warm+n), warm: warm}
}

// send notes the time message i goes out; call it before sending.
func (p *probe) send(i int) { p.sent[i].Store(time.Now().UnixNano()) }

// ack notes the time the send of message i returned.
func (p *probe) ack(i int) { p.acked[i].Store(time.Now().UnixNano()) }

// receive notes the time message i arrived; the first arrival counts.
func (p *probe) receive(i int) {
	if i >= 0 && i < len(p.got) {
		p.got[i].CompareAndSwap(0, time.Now().UnixNano())
	}
}

// wait returns once messages from..to-1 have all arrived, or an error
// after timeout.
func (p *probe) wait(ctx context.Context, from, to int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for i := from; i < to; i++ {
		for p.got[i].Load() == 0 {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("message %d of %d..%d never reached its consumer", i, from, to-1)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return nil
}

// latencies returns receive - send of every measured message.
func (p *probe) latencies() []time.Duration { return p.since(p.sent) }

// afterAck returns receive - the send's return of every measured message
// (negative when the consumer started before the ack came back).
func (p *probe) afterAck() []time.Duration { return p.since(p.acked) }

func (p *probe) since(from []atomic.Int64) []time.Duration {
	ds := make([]time.Duration, 0, len(p.sent)-p.warm)
	for i := p.warm; i < len(p.sent); i++ {
		ds = append(ds, time.Duration(p.got[i].Load()-from[i].Load()))
	}
	return ds
}
