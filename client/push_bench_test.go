package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/eddy-run/eddy/client"
	"github.com/eddy-run/eddy/internal/eddytest"
)

// BenchmarkPushVsMutations measures pushes/s of 1 and 16 push clients
// into one space (one single-mutation push per request, each client
// waiting for its answer) against two baselines of the same run from as
// many concurrent writers: plain POST .../mutations of the same puts
// ("ratio", goal at least 0.8), and the same with a mutationId each
// ("keyed-ratio": the write that, like a push, stores its receipt so a
// retry is safe).
func BenchmarkPushVsMutations(b *testing.B) {
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			srv := eddytest.New(b, eddytest.SQLite)
			c, err := client.New(srv.URL, client.Options{Token: srv.Admin})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(c.CloseIdleConnections)
			sp := c.Space("default")
			ops := max(b.N, clients) / clients * clients
			var push, plain, keyed time.Duration
			// Alternate the two workloads in rounds so that load on the
			// machine weighs on both alike.
			const rounds = 4
			per := max(ops/clients/rounds, 1)
			next := make([]int64, clients)
			for r := range rounds {
				plain += run(b, clients, func(w int) error {
					for i := range per {
						id := fmt.Sprintf("m%d-%d-%d", w, r, i)
						if _, err := sp.Mutate(context.Background(), client.Batch{Mutations: []client.Mutation{benchPut(id)}}); err != nil {
							return err
						}
					}
					return nil
				})
				keyed += run(b, clients, func(w int) error {
					for i := range per {
						m := benchPut(fmt.Sprintf("k%d-%d-%d", w, r, i))
						m.MutationID = m.EntityID
						if _, err := sp.Mutate(context.Background(), client.Batch{Mutations: []client.Mutation{m}}); err != nil {
							return err
						}
					}
					return nil
				})
				push += run(b, clients, func(w int) error {
					for i := range per {
						next[w]++
						id := fmt.Sprintf("p%d-%d-%d", w, r, i)
						if _, err := sp.Push(context.Background(), fmt.Sprintf("bench-%d", w), []client.PushMutation{{Ordinal: next[w], Mutation: benchPut(id)}}); err != nil {
							return err
						}
					}
					return nil
				})
			}
			n := float64(per * clients * rounds)
			b.ReportMetric(n/push.Seconds(), "pushes/s")
			b.ReportMetric(n/plain.Seconds(), "mutations/s")
			b.ReportMetric(n/keyed.Seconds(), "keyed/s")
			b.ReportMetric(plain.Seconds()/push.Seconds(), "ratio")
			b.ReportMetric(keyed.Seconds()/push.Seconds(), "keyed-ratio")
		})
	}
}

func benchPut(id string) client.Mutation {
	return client.Mutation{Op: client.OpPut, Type: "task", EntityID: id, Properties: []byte(`{"title":"bench","open":true}`)}
}

// run runs fn on n goroutines and returns how long they took.
func run(b *testing.B, n int, fn func(w int) error) time.Duration {
	b.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range n {
		wg.Go(func() { errs <- fn(w) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}
