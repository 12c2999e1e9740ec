package changelog

import (
	"slices"

	"github.com/eddy-run/eddy/store"
)

// applyDelete tombstones a live entity; deleting a tombstone is a no-op.
func (a *applier) applyDelete() (*result, *rejection) {
	cur, rej := a.load(a.m.Key())
	if rej != nil {
		return nil, rej
	}
	if rej := a.checkIfVersion(cur); rej != nil {
		return nil, rej
	}
	if !cur.live {
		if cur.exists {
			return &result{noop: true, version: cur.rec.Version}, nil
		}
		return nil, notFound(cur.key)
	}
	c, rec := a.tombstone(cur)
	return &result{
		changes: []store.Change{c},
		records: []store.Record{rec},
		payload: payload{deleted: true},
	}, nil
}

// applyLink adds (link) or removes (unlink) one link of a live entity;
// adding a present link or removing an absent one is a no-op.
func (a *applier) applyLink() (*result, *rejection) {
	cur, rej := a.load(a.m.Key())
	if rej != nil {
		return nil, rej
	}
	if rej := a.checkIfVersion(cur); rej != nil {
		return nil, rej
	}
	if !cur.live {
		return nil, notFound(cur.key)
	}
	l := store.Link{Rel: a.m.Rel, Target: *a.m.Target}
	links := cur.links()
	i, found := slices.BinarySearchFunc(links, l, compareLinks)
	switch {
	case a.m.Op == OpLink && !found:
		links = slices.Insert(links, i, l)
	case a.m.Op == OpUnlink && found:
		links = slices.Delete(links, i, i+1)
	default:
		return &result{noop: true, version: cur.rec.Version}, nil
	}
	f, rej := a.finish(draft{cur: cur, props: cur.props, links: links})
	if rej != nil {
		return nil, rej
	}
	return &result{
		changes: []store.Change{f.change},
		records: []store.Record{f.record},
		payload: payload{rel: l.Rel, target: &l.Target},
	}, nil
}
