package views

import (
	"slices"

	"github.com/eddy-run/eddy/store"
)

// The view index finds, for one source change, the views that may hold
// either side of it, without judging every view of the space.
//
// Views are bucketed by type (every view lists its types). Inside a
// bucket, a view with an equality guard is filed under it: a fieldEquals
// view under (field, expected), a cel view under the first top-level
// conjunct entity.properties.<p> == <literal> of its expression (see
// predicate.Equality). The other views (cel views without such a
// conjunct, and every currentState view, which speaks about every change
// of its types) are always candidates. For a snapshot the index looks up
// each guarded property's value once and takes the views filed under it.
//
// Correctness rests on one claim: a view that is not a candidate for a
// snapshot does not hold it. A fieldEquals view holds a record only when
// its field holds a scalar equal to expected, which is the very key it is
// filed under. A cel view holds a record only when its expression
// evaluates to true, and a conjunction is true only when every top-level
// conjunct is; so its guard is true on the record, which needs the
// property to be present with a scalar value that CEL calls equal to the
// literal. CEL compares strings and bools by value and numbers
// numerically, which is how the decoded values are keyed here (strings,
// bools, float64), and a missing key, null, list or object never makes
// the guard true. Evaluation errors, including the cost limit, are not
// true either. So skipping is exact, and Judge agrees with judging every
// view (index_test.go checks it on random views and changes).

// Index judges source changes against a fixed set of views. It is
// immutable and safe for concurrent use; build a new one when the set
// changes.
type Index struct {
	defs   []*Definition
	has    map[*Definition]bool
	byType map[string]*bucket
}

// bucket holds the views of one type.
type bucket struct {
	always []int32
	props  []*propIndex
}

// propIndex files a bucket's guarded views by their guard's value.
type propIndex struct {
	prop  string
	byKey map[any][]int32
}

// Judged is one view's judgment of a change: View is its position in the
// index (the order NewIndex was given).
type Judged struct {
	View int
	Judgment
}

// NewIndex indexes defs; Judged.View refers to their positions.
func NewIndex(defs []*Definition) *Index {
	x := &Index{defs: defs, has: make(map[*Definition]bool, len(defs)), byType: map[string]*bucket{}}
	for i, d := range defs {
		x.has[d] = true
		prop, key, guarded := d.guard()
		for _, t := range d.Types() {
			b := x.byType[t]
			if b == nil {
				b = &bucket{}
				x.byType[t] = b
			}
			b.add(int32(i), prop, key, guarded)
		}
	}
	return x
}

// guard returns the property and value a view is filed under.
func (d *Definition) guard() (string, any, bool) {
	switch {
	case d.current:
		return "", nil, false
	case d.prg == nil:
		return d.field, d.expected, true
	}
	if eqs := d.prg.Equalities(); len(eqs) > 0 {
		return eqs[0].Property, eqs[0].Value, true
	}
	return "", nil, false
}

func (b *bucket) add(id int32, prop string, key any, guarded bool) {
	if !guarded {
		b.always = append(b.always, id)
		return
	}
	i := slices.IndexFunc(b.props, func(p *propIndex) bool { return p.prop == prop })
	if i < 0 {
		b.props = append(b.props, &propIndex{prop: prop, byKey: map[any][]int32{}})
		i = len(b.props) - 1
	}
	b.props[i].byKey[key] = append(b.props[i].byKey[key], id)
}

// Len returns the number of indexed views.
func (x *Index) Len() int { return len(x.defs) }

// Has reports whether d is indexed.
func (x *Index) Has(d *Definition) bool { return x.has[d] }

// View returns the indexed view at position i.
func (x *Index) View(i int) *Definition { return x.defs[i] }

// Judge returns, in index order, the judgment of every view that holds
// either side of ch, or is a currentState view of its type: exactly the
// views whose Project may say something about ch. Every other view holds
// neither side.
func (x *Index) Judge(ch *store.Change) []Judged {
	b := x.byType[ch.Type]
	if b == nil {
		return nil
	}
	before, after := newSnapshot(ch.Before), newSnapshot(ch.After)
	cands := slices.Clone(b.always)
	for _, p := range b.props {
		cands = p.candidates(before, cands)
		cands = p.candidates(after, cands)
	}
	slices.Sort(cands)
	var out []Judged
	for _, id := range slices.Compact(cands) {
		if j, ok := x.judgeOne(int(id), ch, before, after); ok {
			out = append(out, j)
		}
	}
	return out
}

// candidates appends the views filed under s's value of the property.
func (p *propIndex) candidates(s *snapshot, out []int32) []int32 {
	if s == nil {
		return out
	}
	if v, ok := s.property(p.prop); ok && isScalar(v) {
		out = append(out, p.byKey[v]...)
	}
	return out
}

// judgeOne judges ch with one view; ok when Project may say something.
func (x *Index) judgeOne(id int, ch *store.Change, before, after *snapshot) (Judged, bool) {
	d := x.defs[id]
	j := d.judge(ch, before, after)
	return Judged{View: id, Judgment: j}, j.Before || j.After || (d.current && d.types[ch.Type])
}

// judgeNaive judges ch with every view: the reference Judge must agree
// with.
func (x *Index) judgeNaive(ch *store.Change) []Judged {
	before, after := newSnapshot(ch.Before), newSnapshot(ch.After)
	var out []Judged
	for i := range x.defs {
		if j, ok := x.judgeOne(i, ch, before, after); ok {
			out = append(out, j)
		}
	}
	return out
}
