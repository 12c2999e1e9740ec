package changelog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// PutType validates and stores a type definition.
func (l *Log) PutType(ctx context.Context, space, typ string, raw []byte) (store.TypeDef, error) {
	if !ValidTypeName(typ) {
		return store.TypeDef{}, problem.Param("type", "%q is not a valid type name", typ)
	}
	def, err := ParseTypeDef(raw)
	if err != nil {
		return store.TypeDef{}, err
	}
	if _, err := l.Space(ctx, space); err != nil {
		return store.TypeDef{}, err
	}
	canon, err := json.Marshal(def)
	if err != nil {
		return store.TypeDef{}, fmt.Errorf("encode type definition: %w", err)
	}
	td, err := l.st.TypeDefPut(ctx, space, store.TypeDef{Type: typ, Def: canon, UpdatedAt: l.now()})
	if err != nil {
		return store.TypeDef{}, fmt.Errorf("put type: %w", err)
	}
	return td, nil
}

// GetType returns a type definition (not_found if absent).
func (l *Log) GetType(ctx context.Context, space, typ string) (store.TypeDef, error) {
	if _, err := l.Space(ctx, space); err != nil {
		return store.TypeDef{}, err
	}
	td, err := l.st.TypeDefGet(ctx, space, typ)
	if errors.Is(err, store.ErrNotFound) {
		return store.TypeDef{}, problem.New(problem.NotFound, "type %q has no definition", typ)
	}
	if err != nil {
		return store.TypeDef{}, fmt.Errorf("get type: %w", err)
	}
	return td, nil
}

// DeleteType removes a type definition (not_found if absent).
func (l *Log) DeleteType(ctx context.Context, space, typ string) error {
	if _, err := l.Space(ctx, space); err != nil {
		return err
	}
	err := l.st.TypeDefDelete(ctx, space, typ)
	if errors.Is(err, store.ErrNotFound) {
		return problem.New(problem.NotFound, "type %q has no definition", typ)
	}
	if err != nil {
		return fmt.Errorf("delete type: %w", err)
	}
	return nil
}

// Types lists a space's type definitions.
func (l *Log) Types(ctx context.Context, space string) ([]store.TypeDef, error) {
	if _, err := l.Space(ctx, space); err != nil {
		return nil, err
	}
	tds, err := l.st.TypeDefList(ctx, space)
	if err != nil {
		return nil, fmt.Errorf("list types: %w", err)
	}
	return tds, nil
}

// schemaCache keeps each space's compiled type definitions for one schema
// version.
type schemaCache struct {
	mu      sync.Mutex
	entries map[string]schemaEntry // by space; guarded by mu
}

type schemaEntry struct {
	version int64
	defs    map[string]*TypeDef
}

// cached returns the compiled definitions of a space and their version.
func (c *schemaCache) cached(space string) (map[string]*TypeDef, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[space]
	return e.defs, e.version, ok
}

// load reads a space's schema version, then its definitions, and caches
// them under that version. Reading the version first means the cache can
// only be labelled older than its content, never newer, so a stale entry
// is always caught by the version check under the write lock.
func (c *schemaCache) load(ctx context.Context, st store.Store, space string) error {
	sp, err := st.SpaceGet(ctx, space)
	if err != nil {
		return fmt.Errorf("load types: %w", err)
	}
	tds, err := st.TypeDefList(ctx, space)
	if err != nil {
		return fmt.Errorf("load types: %w", err)
	}
	defs := make(map[string]*TypeDef, len(tds))
	for _, td := range tds {
		def, err := ParseTypeDef(td.Def)
		if err != nil {
			return fmt.Errorf("load type %s: %w", td.Type, err)
		}
		defs[td.Type] = def
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[string]schemaEntry)
	}
	if e, ok := c.entries[space]; !ok || e.version <= sp.SchemaVersion {
		c.entries[space] = schemaEntry{version: sp.SchemaVersion, defs: defs}
	}
	return nil
}
