package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/server"
	"github.com/eddy-run/eddy/watch"
)

// limitOptions are the flags of eddy serve that bound what clients may
// hold: connections, streams and the CEL evaluation of a when.
type limitOptions struct {
	readTimeout  time.Duration
	writeTimeout time.Duration
	idleTimeout  time.Duration
	maxConns     int

	streamWriteTimeout time.Duration
	maxStreams         int
	maxStreamsPerToken int

	whenCost uint64
	whenTime time.Duration
}

// bind defines the limit flags on f, bound to o.
func (o *limitOptions) bind(f *pflag.FlagSet) {
	f.DurationVar(&o.readTimeout, "read-timeout", server.DefaultReadTimeout, "how long a client may take to send a whole request, body included")
	f.DurationVar(&o.writeTimeout, "write-timeout", server.DefaultWriteTimeout, "how long a response may take to write (watch and live view streams are exempt: see --stream-write-timeout)")
	f.DurationVar(&o.idleTimeout, "idle-timeout", server.DefaultIdleTimeout, "how long an idle keep-alive connection stays open")
	f.IntVar(&o.maxConns, "max-connections", server.DefaultMaxConns, "open connections at most (streams included); beyond, a few more answer only /healthz and /readyz")
	f.DurationVar(&o.streamWriteTimeout, "stream-write-timeout", watch.DefaultWriteTimeout, "how long one write to a watch or live view stream may block: a client that reads nothing for this long is disconnected (terminal frame reason slow_consumer)")
	f.IntVar(&o.maxStreams, "max-streams", watch.DefaultMaxStreams, "open watch and live view streams at most; more are 429 rate_limited")
	f.IntVar(&o.maxStreamsPerToken, "max-streams-per-token", watch.DefaultMaxStreamsPerKey, "open streams per token at most; more are 429 rate_limited")
	f.Uint64Var(&o.whenCost, "when-cost-budget", predicate.DefaultBudget.Cost, "CEL cost one request's when may spend across its rows (a page, or one batch of a stream); past it the request is 400")
	f.DurationVar(&o.whenTime, "when-time-budget", predicate.DefaultBudget.Wall, "time one request's when may spend evaluating across its rows; past it the request is 400")
}

// validate checks the limit flags.
func (o *limitOptions) validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--read-timeout", o.readTimeout}, {"--write-timeout", o.writeTimeout}, {"--idle-timeout", o.idleTimeout},
		{"--stream-write-timeout", o.streamWriteTimeout}, {"--when-time-budget", o.whenTime}} {
		if d.v <= 0 {
			return usagef("%s must be positive", d.name)
		}
	}
	switch {
	case o.maxConns < 1:
		return usagef("--max-connections must be at least 1")
	case o.maxStreams < 1:
		return usagef("--max-streams must be at least 1")
	case o.maxStreamsPerToken < 1:
		return usagef("--max-streams-per-token must be at least 1")
	case o.whenCost < predicate.CostLimit:
		return usagef("--when-cost-budget must be at least %d (one evaluation's limit)", predicate.CostLimit)
	}
	return nil
}

// conns returns the connection limits the flags select.
func (o *limitOptions) conns() server.ConnLimits {
	return server.ConnLimits{ReadTimeout: o.readTimeout, WriteTimeout: o.writeTimeout, IdleTimeout: o.idleTimeout, MaxConns: o.maxConns}
}

// watch returns the stream limits the flags select.
func (o *limitOptions) watch() watch.Options {
	return watch.Options{WriteTimeout: o.streamWriteTimeout, MaxStreams: o.maxStreams, MaxStreamsPerKey: o.maxStreamsPerToken}
}

// whenBudget returns the evaluation budget the flags select.
func (o *limitOptions) whenBudget() predicate.Budget {
	return predicate.Budget{Cost: o.whenCost, Wall: o.whenTime}
}
