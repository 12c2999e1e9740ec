package changelog

import (
	"maps"

	"github.com/eddy-run/eddy/problem"
	"github.com/eddy-run/eddy/store"
)

// applyMerge folds entity From (B) into the primary entity (A): A's
// properties win, B's properties A lacks are added, links unite and B is
// deleted. Because B is deleted, a property the baseVersion rule rejects
// rejects the whole merge rather than losing B's value.
func (a *applier) applyMerge() (*result, *rejection) {
	ea, rej := a.load(a.m.Key())
	if rej != nil {
		return nil, rej
	}
	if rej := a.checkIfVersion(ea); rej != nil {
		return nil, rej
	}
	if !ea.live {
		return nil, notFound(ea.key)
	}
	eb, rej := a.load(*a.m.From)
	if rej != nil {
		return nil, rej
	}
	if !eb.live {
		return nil, notFound(eb.key)
	}
	var added []string
	for _, k := range sortedKeys(eb.props) {
		if _, ok := ea.props[k]; !ok {
			added = append(added, k)
		}
	}
	accepted, rejected := a.judgeBase(ea, added)
	if len(rejected) > 0 {
		return nil, &rejection{code: problem.Conflict, props: rejected,
			msg: keyString(ea.key) + ": properties to merge changed after the base version"}
	}
	props := maps.Clone(ea.props)
	for _, k := range accepted {
		props[k] = eb.props[k]
	}
	links := append(ea.links(), eb.links()...)
	fa, rej := a.finish(draft{cur: ea, props: props, links: links, force: true})
	if rej != nil {
		return nil, rej
	}
	cb, rb := a.tombstone(eb)
	return &result{
		accepted: accepted,
		changes:  []store.Change{fa.change, cb},
		records:  []store.Record{fa.record, rb},
		payload:  payload{properties: accepted, state: fa.states, merged: &eb.key},
	}, nil
}

// applySplit moves named properties of the primary entity (A) into a new
// entity C.
func (a *applier) applySplit() (*result, *rejection) {
	ea, rej := a.load(a.m.Key())
	if rej != nil {
		return nil, rej
	}
	if rej := a.checkIfVersion(ea); rej != nil {
		return nil, rej
	}
	if !ea.live {
		return nil, notFound(ea.key)
	}
	names, err := splitNames(a.m.Properties)
	if err != nil {
		return nil, reject(problem.BadRequest, "%s", errMessage(err))
	}
	names = sortedCopy(names)
	if rej := checkSplitNames(ea, names); rej != nil {
		return nil, rej
	}
	ec, rej := a.load(a.m.Into.Key(ea.key.Type))
	if rej != nil {
		return nil, rej
	}
	if ec.live {
		return nil, reject(problem.Conflict, "%s: already exists", keyString(ec.key))
	}
	accepted, rejected := a.judgeBase(ea, names)
	if len(accepted) == 0 {
		return nil, a.baseConflict(ea.key, rejected)
	}
	return a.split(ea, ec, accepted, rejected)
}

// checkSplitNames rejects names the entity does not have.
func checkSplitNames(e *entity, names []string) *rejection {
	var missing []store.RejectedProperty
	for _, n := range names {
		if _, ok := e.props[n]; !ok {
			missing = append(missing, store.RejectedProperty{Property: n, Reason: problem.Unprocessable})
		}
	}
	if len(missing) == 0 {
		return nil
	}
	r := reject(problem.Unprocessable, "%s: cannot split properties it does not have", keyString(e.key))
	r.props = missing
	return r
}

func (a *applier) split(ea, ec *entity, moved []string, rejected []store.RejectedProperty) (*result, *rejection) {
	aProps := maps.Clone(ea.props)
	cProps := make(map[string]any, len(moved))
	for _, n := range moved {
		cProps[n] = aProps[n]
		delete(aProps, n)
	}
	fa, rej := a.finish(draft{cur: ea, props: aProps, links: ea.links()})
	if rej != nil {
		return nil, rej
	}
	fc, rej := a.finish(draft{cur: ec, props: cProps})
	if rej != nil {
		return nil, rej
	}
	return &result{
		accepted: moved,
		rejected: rejected,
		changes:  []store.Change{fa.change, fc.change},
		records:  []store.Record{fa.record, fc.record},
		payload:  payload{properties: moved, state: fa.states, into: &ec.key},
	}, nil
}
