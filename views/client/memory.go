package client

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/eddy-run/eddy/store"
)

// errDone is a transaction used after Commit or Rollback.
var errDone = errors.New("views client: transaction already ended")

type entityKey struct{ space, typ, id string }

type metaKey struct{ space, key string }

// Memory is a ClientState in process memory: what a test or a
// short-lived program needs. A transaction holds the state's lock and
// undoes its changes on Rollback.
type Memory struct {
	lock     chan struct{} // a token: held by the open transaction
	entities map[entityKey]Entity
	progress map[string]Progress
	pending  map[entityKey]Pending // space, client id, ordinal as text
	meta     map[metaKey]string
}

// NewMemory returns an empty in-memory state.
func NewMemory() *Memory {
	m := &Memory{lock: make(chan struct{}, 1), entities: map[entityKey]Entity{}, progress: map[string]Progress{},
		pending: map[entityKey]Pending{}, meta: map[metaKey]string{}}
	return m
}

// Begin waits for the state's lock and opens a transaction.
func (m *Memory) Begin(ctx context.Context) (StateTx, error) {
	select {
	case m.lock <- struct{}{}:
		return &memTx{m: m}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close implements ClientState.
func (m *Memory) Close() error { return nil }

// memTx is one transaction of a Memory: it changes the maps in place and
// keeps what to restore.
type memTx struct {
	m    *Memory
	undo []func()
	done bool
}

func (t *memTx) end() error {
	if t.done {
		return errDone
	}
	t.done = true
	<-t.m.lock
	return nil
}

func (t *memTx) check() error {
	if t.done {
		return errDone
	}
	return nil
}

// set writes v under k in mp (delete when del), remembering the old value.
func set[K comparable, V any](t *memTx, mp map[K]V, k K, v V, del bool) {
	old, had := mp[k]
	t.undo = append(t.undo, func() {
		if had {
			mp[k] = old
		} else {
			delete(mp, k)
		}
	})
	if del {
		delete(mp, k)
	} else {
		mp[k] = v
	}
}

func (t *memTx) Entity(space, typ, id string) (Entity, bool, error) {
	e, ok := t.m.entities[entityKey{space, typ, id}]
	e.Owners = slices.Clone(e.Owners)
	return e, ok, t.check()
}

func (t *memTx) EntitiesOf(space string, keys []store.EntityKey) (map[store.EntityKey]Entity, error) {
	out := make(map[store.EntityKey]Entity, len(keys))
	for _, k := range keys {
		if e, ok := t.m.entities[entityKey{space, k.Type, k.ID}]; ok {
			e.Owners = slices.Clone(e.Owners)
			out[k] = e
		}
	}
	return out, t.check()
}

func (t *memTx) PutEntity(e Entity) error {
	if err := t.check(); err != nil {
		return err
	}
	e.Owners = slices.Clone(e.Owners)
	set(t, t.m.entities, entityKey{e.Space, e.Type, e.ID}, e, false)
	return nil
}

func (t *memTx) Entities(space, typ string) ([]Entity, error) {
	var out []Entity
	for k, e := range t.m.entities {
		if k.space == space && (typ == "" || k.typ == typ) {
			e.Owners = slices.Clone(e.Owners)
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Entity) int { return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.ID, b.ID)) })
	return out, t.check()
}

func (t *memTx) Progress(fp string) (Progress, bool, error) {
	p, ok := t.m.progress[fp]
	p.Seen = slices.Clone(p.Seen)
	return p, ok, t.check()
}

func (t *memTx) PutProgress(p Progress) error {
	if err := t.check(); err != nil {
		return err
	}
	p.Seen = slices.Clone(p.Seen)
	set(t, t.m.progress, p.Context.Fingerprint, p, false)
	return nil
}

func (t *memTx) DeleteProgress(fp string) error {
	set(t, t.m.progress, fp, Progress{}, true)
	return t.check()
}

func (t *memTx) Views() ([]Progress, error) {
	var out []Progress
	for _, p := range t.m.progress {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Progress) int {
		return cmp.Or(cmp.Compare(a.Context.Space, b.Context.Space), cmp.Compare(a.Context.Fingerprint, b.Context.Fingerprint))
	})
	return out, t.check()
}

func (t *memTx) DropSpace(space string) error {
	if err := t.check(); err != nil {
		return err
	}
	for k := range t.m.entities {
		if k.space == space {
			set(t, t.m.entities, k, Entity{}, true)
		}
	}
	for fp, p := range t.m.progress {
		if p.Context.Space == space {
			set(t, t.m.progress, fp, Progress{}, true)
		}
	}
	return nil
}

func pendingKey(space, clientID string, ordinal int64) entityKey {
	return entityKey{space, clientID, string(rune(0)) + itoa(ordinal)}
}

func (t *memTx) Pending(space string) ([]Pending, error) {
	var out []Pending
	for k, p := range t.m.pending {
		if k.space == space {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Pending) int {
		return cmp.Or(cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.Ordinal, b.Ordinal))
	})
	return out, t.check()
}

func (t *memTx) PutPending(p Pending) error {
	if err := t.check(); err != nil {
		return err
	}
	set(t, t.m.pending, pendingKey(p.Space, p.ClientID, p.Ordinal), p, false)
	return nil
}

func (t *memTx) DropPending(space, clientID string, through int64) error {
	for k, p := range t.m.pending {
		if k.space == space && p.ClientID == clientID && p.Ordinal <= through {
			set(t, t.m.pending, k, Pending{}, true)
		}
	}
	return t.check()
}

func (t *memTx) Meta(space, key string) (string, bool, error) {
	v, ok := t.m.meta[metaKey{space, key}]
	return v, ok, t.check()
}

func (t *memTx) PutMeta(space, key, value string) error {
	if err := t.check(); err != nil {
		return err
	}
	set(t, t.m.meta, metaKey{space, key}, value, false)
	return nil
}

func (t *memTx) Commit() error {
	t.undo = nil
	return t.end()
}

func (t *memTx) Rollback() error {
	if t.done {
		return nil
	}
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	t.undo = nil
	return t.end()
}
