package changelog

import (
	"testing"

	"github.com/eddy-run/eddy/store"
)

// TestWriteCacheCoolsDownAfterStale: after a stale prediction, a group
// with a put of an unknown key goes unpredicted for staleCooldown groups
// (it reads the truth instead of failing once more), while a group of
// known keys is still predicted; then unknown puts are predicted again.
func TestWriteCacheCoolsDownAfterStale(t *testing.T) {
	known := store.EntityKey{Type: "task", ID: "known"}
	rec := store.Record{Type: known.Type, ID: known.ID, Version: 3, Kind: store.KindLive}
	group := func(ms ...Mutation) []*pending {
		return []*pending{{req: WriteRequest{Space: "s", Mutations: ms}}}
	}
	unknownPut := group(Mutation{Op: OpPut, Type: "task", EntityID: "new"})
	knownPatch := group(Mutation{Op: OpPatch, Type: "task", EntityID: "known"})

	var c writeCache
	if c.expect("s", unknownPut) != nil {
		t.Fatal("a space never written is predicted")
	}
	c.remember("s", 3, 1, map[store.EntityKey]store.Record{known: rec})
	if e := c.expect("s", unknownPut); e == nil || e.Head != 3 || len(e.Records) != 0 {
		t.Fatalf("unknown put before any stale prediction: %+v, want head 3 and the key predicted absent", e)
	}

	c.forget("s") // as the failed transaction does
	c.stale("s")
	if c.expect("s", knownPatch) != nil {
		t.Fatal("a stale space's state is still predicted")
	}
	c.remember("s", 4, 1, map[store.EntityKey]store.Record{known: rec})
	for i := range staleCooldown {
		if e := c.expect("s", knownPatch); e == nil || e.Records[known].Version != 3 {
			t.Fatalf("group %d of known keys during the cooldown: %+v, want it predicted", i, e)
		}
		if e := c.expect("s", unknownPut); e != nil {
			t.Fatalf("unknown put %d of %d during the cooldown is predicted", i+1, staleCooldown)
		}
	}
	if e := c.expect("s", unknownPut); e == nil {
		t.Fatal("unknown put after the cooldown is not predicted")
	}
	if _, ok := c.cool["s"]; ok {
		t.Fatal("a cooldown that ran out is still kept")
	}
	if c.cool["t"] != 0 || c.expect("t", unknownPut) != nil {
		t.Fatal("another space is affected")
	}
}
