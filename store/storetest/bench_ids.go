package storetest

import (
	"context"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/internal/sortid"
	"github.com/eddy-run/eddy/store"
)

// IDSchemes are the entity id schemes BenchEntityIDs compares, by name:
// random (22 random characters, as a client's UUIDv4-like ids or eddy's
// generated ids before they were time-ordered) and time-ordered (eddy's
// generated ids: the time, then 12 random characters; UUIDv7 and ULID
// are alike).
var IDSchemes = map[string]func() string{
	"random":       func() string { return sortid.Random(22) },
	"time-ordered": func() string { return sortid.New("", 12) },
}

// idBenchEntities is how many entities the space holds before the
// measured writes: enough that random ids fall on many leaf pages.
const idBenchEntities = 50_000

// BenchEntityIDs measures commits/s (and CPU per commit) of writers
// goroutines each putting new entities named by id into one space that
// already holds idBenchEntities entities named alike.
func BenchEntityIDs(b *testing.B, st store.Store, writers int, id func() string) {
	b.Helper()
	ctx := context.Background()
	lg := changelog.New(st, changelog.Options{})
	if _, err := lg.EnsureSpace(ctx, "ids"); err != nil {
		b.Fatal(err)
	}
	prov := store.Provenance{Actor: "bench", Via: "api"}
	for n := 0; n < idBenchEntities; n += 1000 {
		batch := make([]changelog.Mutation, 1000)
		for j := range batch {
			batch[j] = idPut(int64(n+j), id())
		}
		if _, err := lg.Write(ctx, changelog.WriteRequest{Space: "ids", Mutations: batch, Provenance: prov}); err != nil {
			b.Fatal(err)
		}
	}
	RunWriters(b, writers, func(i int64) error {
		req := changelog.WriteRequest{Space: "ids", Mutations: []changelog.Mutation{idPut(i, id())}, Provenance: prov}
		_, err := lg.Write(ctx, req)
		return err
	})
}

// idPut is benchPut's mutation under the entity id id.
func idPut(i int64, id string) changelog.Mutation {
	m := benchPut(i)
	m.EntityID = id
	return m
}
