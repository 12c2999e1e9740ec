package engine

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/eddy-run/eddy/functions"
	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/triggers"
)

// catalog is a space's parsed trigger and function definitions.
type catalog struct {
	triggers  map[string]*triggers.Trigger
	functions map[string]*functions.Function
}

// parsedDef caches one parsed definition under its stored bytes.
type parsedDef struct {
	raw []byte
	v   any
}

// defCache keeps parsed definitions so a lease round recompiles CEL and
// expr only for definitions that changed.
type defCache struct {
	mu    sync.Mutex           // a leaf: parsing happens outside it
	items map[string]parsedDef // guarded by mu; space/kind/name
}

// catalog loads a space's definitions, parsing only changed ones. A
// stored definition that no longer parses is logged and left out.
func (e *Engine) catalog(ctx context.Context, space string) (*catalog, error) {
	cat := &catalog{triggers: map[string]*triggers.Trigger{}, functions: map[string]*functions.Function{}}
	ts, err := e.st.DefinitionList(ctx, space, store.DefTrigger)
	if err != nil {
		return nil, fmt.Errorf("list triggers of %s: %w", space, err)
	}
	fs, err := e.st.DefinitionList(ctx, space, store.DefFunction)
	if err != nil {
		return nil, fmt.Errorf("list functions of %s: %w", space, err)
	}
	for _, d := range ts {
		t, err := e.parseTrigger(space, d)
		if err != nil {
			e.logger.Error("engine: stored trigger does not parse", "space", space, "trigger", d.Name, "err", err)
			continue
		}
		cat.triggers[d.Name] = t
	}
	for _, d := range fs {
		v, err := e.defs.parse(space, store.DefFunction, d, func(name string, raw []byte) (any, error) {
			return functions.ParseFunction(name, raw)
		})
		if err != nil {
			e.logger.Error("engine: stored function does not parse", "space", space, "function", d.Name, "err", err)
			continue
		}
		cat.functions[d.Name] = v.(*functions.Function)
	}
	return cat, nil
}

// parseTrigger returns the parsed stored trigger d, cached.
func (e *Engine) parseTrigger(space string, d store.Definition) (*triggers.Trigger, error) {
	v, err := e.defs.parse(space, store.DefTrigger, d, func(name string, raw []byte) (any, error) {
		return triggers.ParseTrigger(name, raw)
	})
	if err != nil {
		return nil, err
	}
	return v.(*triggers.Trigger), nil
}

// parse returns the cached parse of d, parsing it when its bytes changed.
// One definition's bytes have one parse: when two callers parsed the same
// bytes at once, both get the one cached first. The engine tells an
// unchanged definition by that identity (spaceRun.indexCurrent), so a
// second parse of unchanged bytes would make it rebuild its match index,
// and leave the in-commit path idle until it did.
func (c *defCache) parse(space, kind string, d store.Definition, parse func(string, []byte) (any, error)) (any, error) {
	key := space + "/" + kind + "/" + d.Name
	c.mu.Lock()
	v, ok := c.lookup(key, d.Def)
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := parse(d.Name, d.Def)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if first, ok := c.lookup(key, d.Def); ok {
		return first, nil // parsed meanwhile by another caller
	}
	if c.items == nil {
		c.items = map[string]parsedDef{}
	}
	c.items[key] = parsedDef{raw: bytes.Clone(d.Def), v: v}
	return v, nil
}

// lookup returns the parse cached under key if it was parsed from raw.
// The caller holds mu.
func (c *defCache) lookup(key string, raw []byte) (any, bool) {
	p, ok := c.items[key]
	if !ok || !bytes.Equal(p.raw, raw) {
		return nil, false
	}
	return p.v, true
}
