package consume

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/eddy-run/eddy/bench/internal/harness"
	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/functions"
)

// eddySetup opens eddy on kind with a trigger on type item calling a go
// handler that notes the message number (the entity id "i<N>").
func eddySetup(kind string) func(context.Context, harness.Config, *probe) (func(context.Context, int) error, func() error, error) {
	return func(ctx context.Context, c harness.Config, p *probe) (func(context.Context, int) error, func() error, error) {
		e, err := harness.OpenEddy(ctx, c, kind)
		if err != nil {
			return nil, nil, err
		}
		handler := func(_ context.Context, in functions.Input) ([]changelog.Mutation, error) {
			if i, err := strconv.Atoi(strings.TrimPrefix(in.Row.EntityID, "i")); err == nil {
				p.receive(i)
			}
			return nil, nil
		}
		if err := e.GoTrigger(ctx, "probe", "item", handler); err != nil {
			return nil, nil, errors.Join(err, e.Close())
		}
		send := func(ctx context.Context, i int) error {
			n := strconv.Itoa(i)
			_, err := e.Put(ctx, "item", "i"+n, []byte(`{"k":`+n+`}`))
			return err
		}
		return send, e.Close, nil
	}
}

// jetStreamSetup starts JetStream (fsyncing every message with
// syncAlways) with a stream over bench.> and a durable consumer filtered
// on bench.item, push or pull; the message body is its number.
func jetStreamSetup(push, syncAlways bool) func(context.Context, harness.Config, *probe) (func(context.Context, int) error, func() error, error) {
	return func(ctx context.Context, c harness.Config, p *probe) (func(context.Context, int) error, func() error, error) {
		n, err := harness.StartNATS(c, syncAlways)
		if err != nil {
			return nil, nil, err
		}
		cc, err := consumer(ctx, n, p, push)
		if err != nil {
			return nil, nil, errors.Join(err, n.Close())
		}
		send := func(ctx context.Context, i int) error {
			_, err := n.JS.Publish(ctx, "bench.item", []byte(strconv.Itoa(i)))
			return err
		}
		return send, func() error { cc.Stop(); return n.Close() }, nil
	}
}

// consumer creates the stream and the durable consumer and starts
// consuming.
func consumer(ctx context.Context, n *harness.NATS, p *probe, push bool) (jetstream.ConsumeContext, error) {
	s, err := n.Stream(ctx, "BENCH", "bench.>")
	if err != nil {
		return nil, err
	}
	handle := func(m jetstream.Msg) {
		if i, err := strconv.Atoi(string(m.Data())); err == nil {
			p.receive(i)
		}
		_ = m.Ack()
	}
	cfg := jetstream.ConsumerConfig{Durable: "probe", FilterSubject: "bench.item", AckPolicy: jetstream.AckExplicitPolicy}
	if push {
		cfg.DeliverSubject = nats.NewInbox()
		pc, err := s.CreateOrUpdatePushConsumer(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return pc.Consume(handle)
	}
	pc, err := s.CreateOrUpdateConsumer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return pc.Consume(handle)
}
