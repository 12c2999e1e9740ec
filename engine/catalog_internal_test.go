package engine

import (
	"sync"
	"testing"

	"github.com/eddy-run/eddy/store"
)

// Two callers parsing the same unchanged definition at once get one
// parse: the engine tells an unchanged definition by its identity, and a
// second one would leave the in-commit path idle until the evaluator
// rebuilt its match index (a lease round and a status read racing at a
// trigger's creation did that under load).
func TestDefCacheOneParsePerDefinition(t *testing.T) {
	var c defCache
	d := store.Definition{Name: "p", Def: []byte(`{"v":1}`)}
	inside := make(chan struct{})
	release := make(chan struct{})
	parse := func(string, []byte) (any, error) {
		inside <- struct{}{}
		<-release
		return new(int), nil
	}
	got := make([]any, 2)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			v, err := c.parse("s", store.DefTrigger, d, parse)
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		})
	}
	<-inside // both missed the cache and are parsing
	<-inside
	close(release)
	wg.Wait()
	if got[0] != got[1] {
		t.Fatalf("two parses of one definition: %p and %p", got[0], got[1])
	}
	again, err := c.parse("s", store.DefTrigger, d, func(string, []byte) (any, error) {
		t.Fatal("parsed an unchanged definition again")
		return nil, nil
	})
	if err != nil || again != got[0] {
		t.Fatalf("cached parse: %p, %v; want %p", again, err, got[0])
	}
	changed := store.Definition{Name: "p", Def: []byte(`{"v":2}`)}
	v, err := c.parse("s", store.DefTrigger, changed, func(string, []byte) (any, error) { return new(int), nil })
	if err != nil || v == got[0] {
		t.Fatalf("changed definition: %p, %v; want a new parse", v, err)
	}
}
