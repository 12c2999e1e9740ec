package auth

import (
	"container/list"
	"sync"

	"github.com/eddy-run/eddy/store"
)

// DefaultCacheSize is how many authenticated tokens a Service keeps in
// memory (NewService).
const DefaultCacheSize = 4096

// tokenCache is a bounded LRU of authenticated tokens by secret hash,
// valid for one token generation: when the store's generation moves (a
// revocation, in any process), every entry is dropped.
type tokenCache struct {
	mu  sync.Mutex
	max int
	gen int64                      // generation the entries belong to; guarded by mu
	ll  *list.List                 // front is most recent; guarded by mu
	m   map[[32]byte]*list.Element // guarded by mu
}

type cacheEntry struct {
	key [32]byte
	tok store.Token
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{max: max, ll: list.New(), m: make(map[[32]byte]*list.Element)}
}

// get returns the token cached under key for generation gen.
func (c *tokenCache) get(key [32]byte, gen int64) (store.Token, bool) {
	if c == nil {
		return store.Token{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		if gen > c.gen {
			c.reset(gen)
		}
		return store.Token{}, false
	}
	el, ok := c.m[key]
	if !ok {
		return store.Token{}, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*cacheEntry).tok, true
}

// put caches tok under key, read at generation gen; the least recently
// used entry goes when the cache is full.
func (c *tokenCache) put(key [32]byte, gen int64, tok store.Token) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		if gen < c.gen {
			return // read before a revocation this cache already saw
		}
		c.reset(gen)
	}
	if el, ok := c.m[key]; ok {
		el.Value.(*cacheEntry).tok = tok
		c.ll.MoveToFront(el)
		return
	}
	c.m[key] = c.ll.PushFront(&cacheEntry{key: key, tok: tok})
	if c.ll.Len() > c.max {
		old := c.ll.Back()
		c.ll.Remove(old)
		delete(c.m, old.Value.(*cacheEntry).key)
	}
}

// reset empties the cache for generation gen; the caller holds mu.
func (c *tokenCache) reset(gen int64) {
	c.gen = gen
	c.ll.Init()
	clear(c.m)
}
