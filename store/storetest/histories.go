package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// testEntityHistories covers the entity-scoped reads (a read or history
// filtered by one entity, FirstChangesAfter) over entities that share
// groups and are named by random ids, through every op that writes an
// entity's row (a put that creates it, patches, a link, a delete and a
// put over its tombstone, a split that creates another) and the
// engine's own rows, whose keys have no entity row: every key's history
// must be exactly the commits that name it, as a scan of the whole log
// says. (SQLite keys its entity history index by a number each entity
// gets when its row is created; see its migration 0019.)
func testEntityHistories(t *testing.T, open OpenFunc) {
	t.Parallel()
	h := newHarness(t, open, changelog.Options{})
	rng := rand.New(rand.NewPCG(7, 15))
	const writers, each = 8, 6
	keys := make([][]store.EntityKey, writers)
	for w := range writers {
		for range each {
			keys[w] = append(keys[w], store.EntityKey{Type: "task", ID: fmt.Sprintf("%016x", rng.Uint64())})
		}
	}
	steps := []func(k store.EntityKey) changelog.Mutation{
		func(k store.EntityKey) changelog.Mutation { return put(k.Type, k.ID, `{"n":1}`) },
		func(k store.EntityKey) changelog.Mutation { return patch(k.Type, k.ID, `{"n":2}`) },
		func(k store.EntityKey) changelog.Mutation { return link(k.Type, k.ID, "r", "user", "u1") },
		func(k store.EntityKey) changelog.Mutation { return del(k.Type, k.ID) },
		func(k store.EntityKey) changelog.Mutation { return put(k.Type, k.ID, `{"n":3}`) },
	}
	// Writers run each step over their keys at once, so groups mix them.
	for _, step := range steps {
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for w := range writers {
			wg.Go(func() {
				for _, k := range keys[w] {
					res, err := h.log.Write(h.ctx, changelog.WriteRequest{Space: "s", Mutations: []changelog.Mutation{step(k)}, Provenance: owner})
					if err == nil && res.Receipts[0].Status != store.ReceiptApplied {
						err = fmt.Errorf("%s: receipt %s", k.ID, js(res.Receipts[0]))
					}
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	all := slices.Concat(keys...)
	split0 := store.EntityKey{Type: "task", ID: "split-" + all[0].ID}
	h.write(split("task", all[0].ID, split0.ID, "n"))
	h.write(patch("task", split0.ID, `{"n":4}`))
	fire := changelog.EngineRow{Op: changelog.OpFire, Type: "eddy.trigger", EntityID: "nightly", Payload: []byte(`{}`),
		Provenance: store.Provenance{Actor: "engine", Via: "engine", Trigger: "nightly"}}
	h.writeReq(changelog.WriteRequest{Engine: []changelog.EngineRow{fire}})
	h.write(put("task", all[1].ID, `{"n":5}`))
	h.writeReq(changelog.WriteRequest{Engine: []changelog.EngineRow{fire}})
	all = append(all, split0, store.EntityKey{Type: "eddy.trigger", ID: "nightly"})

	log := drainRead(t, h, changelog.Filter{}, 1000, 0)
	for _, k := range all {
		f := changelog.Filter{EntityType: k.Type, EntityID: k.ID}
		var want []int64
		for _, r := range log {
			if refMatch(f, r) {
				want = append(want, r.Seq)
			}
		}
		if len(want) == 0 {
			t.Fatalf("%s/%s: no commit names it", k.Type, k.ID)
		}
		if got := seqsOf(drainRead(t, h, f, 3, 0)); !slices.Equal(got, want) {
			t.Fatalf("read of %s/%s = %v, want %v", k.Type, k.ID, got, want)
		}
		back := seqsOf(drainHistory(t, h, f, 2, 0, 0))
		slices.Reverse(back)
		if !slices.Equal(back, want) {
			t.Fatalf("history of %s/%s = %v, want %v", k.Type, k.ID, back, want)
		}
	}
	h.wantFirstChanges(log, all[:len(all)-1])
}

// wantFirstChanges checks FirstChangesAfter for keys after every
// seventh seq of log against the first commit whose changes touch each
// key (a change's version is its commit's seq).
func (h *harness) wantFirstChanges(log []store.Row, keys []store.EntityKey) {
	h.t.Helper()
	touched := map[store.EntityKey][]int64{}
	for _, r := range log {
		for _, ch := range h.commitAt(r.Seq).Changes {
			k := store.EntityKey{Type: ch.Type, ID: ch.ID}
			touched[k] = append(touched[k], r.Seq)
		}
	}
	for after := int64(0); after <= int64(len(log)); after += 7 {
		got, err := h.st.FirstChangesAfter(h.ctx, "s", after, keys)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, k := range keys {
			i, _ := slices.BinarySearch(touched[k], after+1)
			ch, ok := got[k]
			switch {
			case i == len(touched[k]) && ok:
				h.t.Fatalf("first change of %s after %d = %s, want none", k.ID, after, js(ch))
			case i < len(touched[k]) && (!ok || ch.ID != k.ID || ch.Version != touched[k][i]):
				h.t.Fatalf("first change of %s after %d = %s, want the one at seq %d", k.ID, after, js(ch), touched[k][i])
			}
		}
	}
}
