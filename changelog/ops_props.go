package changelog

import (
	"maps"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// applyProperties applies put (replace the properties) and patch (RFC
// 7386 merge patch onto them).
func (a *applier) applyProperties() (*result, *rejection) {
	cur, rej := a.load(a.m.Key())
	if rej != nil {
		return nil, rej
	}
	if rej := a.checkIfVersion(cur); rej != nil {
		return nil, rej
	}
	var p *proposal
	if a.m.Op == OpPut {
		p, rej = a.proposePut(cur)
	} else {
		p, rej = a.proposePatch(cur)
	}
	if rej != nil {
		return nil, rej
	}
	f, rej := a.finish(draft{cur: cur, props: p.props, links: cur.links()})
	if rej != nil {
		return nil, rej
	}
	res := &result{accepted: p.accepted, rejected: p.rejected}
	if !f.changed {
		res.noop, res.version = true, cur.rec.Version
		return res, nil
	}
	res.changes = []store.Change{f.change}
	res.records = []store.Record{f.record}
	res.payload = payload{created: f.created, properties: p.accepted, state: f.states}
	return res, nil
}

// proposal is the new properties of a put or patch after the baseVersion
// rule, with the names it accepted and rejected.
type proposal struct {
	props    map[string]any
	accepted []string
	rejected []store.RejectedProperty
}

// proposePut proposes the put's object; the names it proposes are its
// keys and the current keys it removes.
func (a *applier) proposePut(cur *entity) (*proposal, *rejection) {
	obj, err := a.m.object(a.m.Properties)
	if err != nil {
		return nil, reject(problem.BadRequest, "properties: %v", err)
	}
	names := map[string]bool{}
	for k := range obj {
		names[k] = true
	}
	for k := range cur.props {
		names[k] = true
	}
	accepted, rejected := a.judgeBase(cur, sortedKeys(names))
	if len(rejected) > 0 && len(accepted) == 0 {
		return nil, a.baseConflict(cur.key, rejected)
	}
	for _, r := range rejected {
		if v, ok := cur.props[r.Property]; ok {
			obj[r.Property] = v
		} else {
			delete(obj, r.Property)
		}
	}
	return &proposal{props: obj, accepted: accepted, rejected: rejected}, nil
}

// proposePatch merges the patch's accepted members into the current
// properties; the names it proposes are the patch's keys.
func (a *applier) proposePatch(cur *entity) (*proposal, *rejection) {
	if !cur.live {
		return nil, notFound(cur.key)
	}
	patch, err := a.m.object(a.m.Patch)
	if err != nil {
		return nil, reject(problem.BadRequest, "patch: %v", err)
	}
	accepted, rejected := a.judgeBase(cur, sortedKeys(patch))
	if len(rejected) > 0 && len(accepted) == 0 {
		return nil, a.baseConflict(cur.key, rejected)
	}
	props := maps.Clone(cur.props)
	for _, k := range accepted {
		if patch[k] == nil {
			delete(props, k)
			continue
		}
		props[k] = mergeValue(props[k], patch[k])
	}
	return &proposal{props: props, accepted: accepted, rejected: rejected}, nil
}
