package storetest

import (
	"context"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// HoldGroup starts a write of m to space whose group stays open inside
// its Effects (after its commits are appended, before its transaction
// commits) until release is called. It returns once the group is there;
// wait returns the write's error.
func HoldGroup(t testing.TB, lg *changelog.Log, space string, m changelog.Mutation) (release func(), wait func() error) {
	t.Helper()
	inside, out, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := lg.Write(context.Background(), changelog.WriteRequest{Space: space, Mutations: []changelog.Mutation{m},
			Provenance: store.Provenance{Actor: "owner", Via: "api"},
			Effects: func(context.Context, store.WriteTx, changelog.WriteResult) error {
				close(inside)
				<-out
				return nil
			}})
		done <- err
	}()
	<-inside
	return func() { close(out) }, func() error { return <-done }
}
