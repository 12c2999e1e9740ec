package changelog

import (
	"sync"

	"github.com/eddy-run/eddy/store"
)

// MaxCachedRecords bounds the records the write cache keeps per space;
// past it the space's cache starts over.
var MaxCachedRecords = 4096

// staleCooldown is how many of a space's groups with a put of an unknown
// key go unpredicted after a prediction of the space went stale. A put of
// an entity this process never saw is predicted a creation; when such
// entities exist (a process re-putting what another wrote), every such
// group would be tried twice, the optimistic attempt failing: after a
// stale attempt, the next groups read their state instead, and one in
// staleCooldown+1 risks the retry.
const staleCooldown = 64

// writeCache remembers, per space, the state this process's last commit
// left: the head, the schema version and the records it read or wrote.
// A group whose keys are all known (or are created by put) predicts the
// opening reads from it, so a driver with round trips can commit in one;
// the driver verifies the prediction under the space lock.
type writeCache struct {
	mu     sync.Mutex
	spaces map[string]*cachedSpace // guarded by mu
	// cool counts, per space, the groups with an unknown put still to go
	// unpredicted (staleCooldown); guarded by mu.
	cool map[string]int
}

type cachedSpace struct {
	head          int64
	schemaVersion int64
	records       map[store.EntityKey]store.Record
}

// expect returns the prediction for a group, or nil when the space is not
// cached, a key is unknown other than as the target of a put, or a put's
// key is unknown while the space cools down after a stale prediction.
func (c *writeCache) expect(space string, group []*pending) *store.Expectation {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs, ok := c.spaces[space]
	if !ok {
		return nil
	}
	e := &store.Expectation{Head: cs.head, SchemaVersion: cs.schemaVersion, Records: make(map[store.EntityKey]store.Record)}
	unknownPut := false
	for _, p := range group {
		for i := range p.req.Mutations {
			m := &p.req.Mutations[i]
			for _, k := range m.Keys() {
				if r, ok := cs.records[k]; ok {
					e.Records[k] = r
				} else if m.Op != OpPut {
					return nil
				} else {
					unknownPut = true
				}
			}
		}
	}
	if n := c.cool[space]; unknownPut && n > 0 {
		if n == 1 {
			delete(c.cool, space)
		} else {
			c.cool[space] = n - 1
		}
		return nil
	}
	return e
}

// stale starts a space's cooldown (staleCooldown) after a stale
// prediction; the failed transaction has forgotten its cached state.
func (c *writeCache) stale(space string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cool == nil {
		c.cool = make(map[string]int)
	}
	c.cool[space] = staleCooldown
}

// remember records the state a committed group left.
func (c *writeCache) remember(space string, head, schemaVersion int64, records map[store.EntityKey]store.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spaces == nil {
		c.spaces = make(map[string]*cachedSpace)
	}
	cs, ok := c.spaces[space]
	if !ok || len(cs.records)+len(records) > MaxCachedRecords {
		cs = &cachedSpace{records: make(map[store.EntityKey]store.Record, len(records))}
		c.spaces[space] = cs
	}
	cs.head, cs.schemaVersion = head, schemaVersion
	for k, r := range records {
		cs.records[k] = r
	}
}

// forget drops a space's cached state after a failed or stale write.
func (c *writeCache) forget(space string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.spaces, space)
}
