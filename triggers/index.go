package triggers

import (
	"cmp"
	"maps"
	"slices"

	"github.com/google/cel-go/cel"

	"github.com/eddy-run/eddy/store"
)

// The match index judges a row by only the triggers that can match it.
//
// Prefilter. Triggers are bucketed by type (a trigger without types sits
// in the wildcard bucket); a row consults its type's bucket and the
// wildcard bucket, and each candidate's ops, actors and excludeActors are
// checked with map lookups.
//
// Guards. A guard (see guard.go) is a top-level conjunct of a `when`
// that one path value decides: `<path> == <literal>` or `<path> != null`.
// Inside a bucket, a trigger with an equality guard is hashed under one
// of them: the bucket keeps, per path, a map from the literal to its
// triggers. For a row the index evaluates each such path once and takes
// the triggers filed under the row's value. Triggers without one are
// residual and always candidates. Every candidate is then checked against
// all its guards (cheap: path values are cached per row) and only then
// runs its whole program. Correctness rests on one claim: a trigger is
// skipped only when its program would certainly have answered
// not_matched. The argument:
//
// The program is C1 && C2 && ... && Cn (its top-level conjuncts, left to
// right). cel-go evaluates them in that order; it returns false as soon
// as one is false; otherwise it returns the first (leftmost) non-true
// value as the error, and true if all are true. A missing key or a
// field of null is the error "no such key", which the trigger records as
// not_matched; any other error, including exceeding the cost limit
// (which aborts the evaluation wherever it happens), is stance error.
// Let the guard be Ck, and call the expression bounded when costBound
// (cost.go) proves its runtime cost within the limit whatever the input,
// so the limit can never fire (such programs run without a cost tracker).
//
//  1. The path has a value whose CEL equality with the literal is false
//     (a different key, or a value with no key: null, map, list,
//     timestamp; CEL equality between different kinds is false, never an
//     error), or a `!= null` guard meets null. Ck is false. If k = 1,
//     evaluation stops after C1, whose own small cost is checked against
//     the limit when the guard is found: the answer is false. If k > 1
//     and the expression is bounded, C1..Ck-1 cannot abort it, and the
//     answer is false whatever they yield. Guards with k > 1 are kept
//     only when bounded. Skipping is exact.
//  2. The path is missing ("no such key"). Ck is that error. If some
//     conjunct is false the answer is false; otherwise it is the leftmost
//     error, which is Ck's when k = 1. So with k = 1 and bounded the
//     answer is not_matched either way, and the trigger is skipped; in
//     every other case (k > 1, or unbounded, where a later conjunct may
//     exceed the cost limit) the trigger is a candidate and is evaluated.
//  3. Evaluating the path raises any other error (e.g. a field of a
//     list): every trigger under that path is a candidate.
//  4. The value's key equals the literal: a candidate.
//
// The path is evaluated by a CEL program of its own source, in the same
// environment and with the same bindings, so its value, its missing key
// and its other errors are exactly those the trigger's program meets.
// Numbers are keyed by their float64 value: CEL compares int with double
// through float64 and int with uint exactly, so values CEL calls equal
// always share a key (a shared key for unequal values only costs an
// evaluation).

// Result is one trigger's verdict on a row: StanceMatched, or StanceError
// with Err when its `when` raised an error.
type Result struct {
	Trigger string
	Stance  Stance
	Err     error
}

// Index matches rows against a fixed set of change triggers. It is
// immutable and safe for concurrent use; build a new one when the set
// changes.
type Index struct {
	entries  []*entry
	buckets  map[string]*bucket
	wildcard *bucket
	// types lists the buckets' types, sorted; anyType is set when the
	// wildcard bucket holds a trigger (see Types).
	types   []string
	anyType bool
	paths   []cel.Program
	// guarded counts triggers hashed under a guard (for tests).
	guarded int
}

// entry is one indexed trigger.
type entry struct {
	name    string
	prg     *Program
	types   map[string]bool
	ops     map[string]bool
	actors  map[string]bool
	exclude map[string]bool
	guards  []entryGuard
	// bad is the compile error of a When that came without a program.
	bad error
}

// entryGuard is a guard with its path resolved to an index path id.
type entryGuard struct {
	guard
	pathID int
}

// bucket holds the triggers of one type (or of no type).
type bucket struct {
	residual []int32
	eqs      []*eqIndex
	byPath   map[int]*eqIndex
}

// eqIndex files a bucket's triggers hashed under one path.
type eqIndex struct {
	pathID int
	byKey  map[valueKey][]int32
	// onMissing: triggers that must be evaluated when the path is
	// missing (case 2 above).
	onMissing []int32
	all       []int32
}

// NewIndex indexes the change triggers among ts (cron triggers and nil
// are ignored), whatever their Enabled says: the caller passes the set
// it wants judged. Triggers should come from ParseTrigger, and names
// should be unique.
func NewIndex(ts []*Trigger) *Index {
	x := &Index{buckets: map[string]*bucket{}, wildcard: newBucket()}
	pathIDs := map[string]int{}
	for _, t := range ts {
		if t != nil && t.Source.Changes != nil {
			x.entries = append(x.entries, newEntry(t, x.pathID(pathIDs)))
		}
	}
	slices.SortStableFunc(x.entries, func(a, b *entry) int { return cmp.Compare(a.name, b.name) })
	for i, e := range x.entries {
		x.add(int32(i), e)
		x.anyType = x.anyType || len(e.types) == 0
	}
	x.types = slices.Sorted(maps.Keys(x.buckets))
	return x
}

// Types returns the entity types whose rows can have a candidate among
// the index's triggers, sorted (the caller must not modify them): a row
// of another type matches nothing whatever its changes hold, so a reader
// judging rows for the index need not read its changes. all is true when
// a trigger names no types, so a row of any type can have a candidate.
func (x *Index) Types() (types []string, all bool) { return x.types, x.anyType }

// pathID returns a function interning a path's source and compiling its
// program; it answers -1 for a path that does not compile.
func (x *Index) pathID(ids map[string]int) func(string) int {
	return func(src string) int {
		if id, ok := ids[src]; ok {
			return id
		}
		id := -1
		if a, iss := env.Compile(src); iss == nil || iss.Err() == nil {
			if prg, err := env.Program(a); err == nil {
				id = len(x.paths)
				x.paths = append(x.paths, prg)
			}
		}
		ids[src] = id
		return id
	}
}

func newEntry(t *Trigger, pathID func(string) int) *entry {
	c := t.Source.Changes
	e := &entry{name: t.Name, prg: c.prg, types: set(c.Types), ops: set(c.Ops),
		actors: set(c.Actors), exclude: set(c.ExcludeActors)}
	if e.prg == nil && c.When != "" {
		e.prg, e.bad = Compile("source.changes.when", c.When)
	}
	if e.prg == nil {
		return e
	}
	for _, g := range e.prg.guards {
		if id := pathID(g.path); id >= 0 {
			e.guards = append(e.guards, entryGuard{guard: g, pathID: id})
		}
	}
	return e
}

func set(items []string) map[string]bool {
	if len(items) == 0 {
		return nil
	}
	m := make(map[string]bool, len(items))
	for _, s := range items {
		m[s] = true
	}
	return m
}

// add files entry id in its buckets.
func (x *Index) add(id int32, e *entry) {
	g, hashed := e.hashGuard()
	if hashed {
		x.guarded++
	}
	if len(e.types) == 0 {
		x.wildcard.add(id, e, g, hashed)
		return
	}
	for typ := range e.types {
		b := x.buckets[typ]
		if b == nil {
			b = newBucket()
			x.buckets[typ] = b
		}
		b.add(id, e, g, hashed)
	}
}

// hashGuard picks the equality guard to hash e under: the best ranked,
// leftmost first.
func (e *entry) hashGuard() (entryGuard, bool) {
	best, ok := entryGuard{}, false
	for _, g := range e.guards {
		if g.kind == guardEq && (!ok || g.rank > best.rank) {
			best, ok = g, true
		}
	}
	return best, ok
}

func newBucket() *bucket { return &bucket{byPath: map[int]*eqIndex{}} }

// add files entry id as residual or under its hash guard g.
func (b *bucket) add(id int32, e *entry, g entryGuard, hashed bool) {
	if !hashed {
		b.residual = append(b.residual, id)
		return
	}
	eq := b.byPath[g.pathID]
	if eq == nil {
		eq = &eqIndex{pathID: g.pathID, byKey: map[valueKey][]int32{}}
		b.eqs = append(b.eqs, eq)
		b.byPath[g.pathID] = eq
	}
	eq.byKey[g.key] = append(eq.byKey[g.key], id)
	eq.all = append(eq.all, id)
	if !g.first || !e.prg.bounded {
		eq.onMissing = append(eq.onMissing, id)
	}
}

// Len returns the number of indexed triggers.
func (x *Index) Len() int { return len(x.entries) }

// Match returns, in trigger name order, a Result for every indexed
// trigger that matches in.Row (StanceMatched) or whose `when` raised an
// error on it (StanceError). Triggers absent from the answer did not
// match. A record that cannot be decoded is an error (ErrBadInput) for
// the triggers that read it. A Subject without a row matches nothing.
// Match does not judge echo, coalescing, start or cursors: that is the
// evaluator's work.
func (x *Index) Match(in Subject) []Result {
	out, _ := x.MatchWithin(in, nil)
	return out
}

// Budget bounds the judging of a run of rows through MatchWithin: the
// candidates (triggers a row reaches past the prefilter and guards) and
// the CEL cost their programs may charge (each candidate's CostBound,
// taken before it runs). Both count down.
type Budget struct {
	Candidates int
	Cost       uint64
}

// charge takes one candidate of cost c; false when the budget cannot pay.
func (b *Budget) charge(c uint64) bool {
	if b.Candidates <= 0 || c > b.Cost {
		return false
	}
	b.Candidates--
	b.Cost -= c
	return true
}

// MatchWithin is Match charging every candidate to b before judging it
// (nil b: no bound). ok false means the budget ran out on this row: the
// answer is incomplete and must be dropped.
func (x *Index) MatchWithin(in Subject, b *Budget) (out []Result, ok bool) {
	if in.Row == nil {
		return nil, true
	}
	m := &matcher{x: x, in: in}
	var cands []int32
	if b := x.buckets[in.Row.Type]; b != nil {
		cands = m.candidates(b, cands)
	}
	cands = m.candidates(x.wildcard, cands)
	slices.Sort(cands)
	for _, id := range cands {
		e := x.entries[id]
		if !e.admits(in.Row) || m.skip(e) {
			continue
		}
		if b != nil && !b.charge(e.cost()) {
			return nil, false
		}
		if r, ok := judge(e, m.vars()); ok {
			out = append(out, r)
		}
	}
	return out, true
}

// cost is the most judging e once can cost (1 without a program).
func (e *entry) cost() uint64 {
	if e.prg == nil {
		return 1
	}
	return e.prg.CostBound()
}

// matchNaive judges in with every indexed trigger's prefilter and
// program: the reference Match must agree with.
func (x *Index) matchNaive(in Subject) []Result {
	if in.Row == nil {
		return nil
	}
	vars := newVars(in)
	var out []Result
	for _, e := range x.entries {
		if e.types != nil && !e.types[in.Row.Type] || !e.admits(in.Row) {
			continue
		}
		if r, ok := judge(e, vars); ok {
			out = append(out, r)
		}
	}
	return out
}

// judge evaluates an admitted trigger; ok reports a result worth
// returning (matched or error).
func judge(e *entry, vars *vars) (Result, bool) {
	switch {
	case e.bad != nil:
		return Result{Trigger: e.name, Stance: StanceError, Err: e.bad}, true
	case e.prg == nil:
		return Result{Trigger: e.name, Stance: StanceMatched}, true
	}
	o := e.prg.eval(vars)
	if o.Stance == StanceNotMatched {
		return Result{}, false
	}
	return Result{Trigger: e.name, Stance: o.Stance, Err: o.Err}, true
}

// admits applies the ops and actor lists (types are the buckets' job).
func (e *entry) admits(r *store.Row) bool {
	switch {
	case e.ops == nil && engineOps[r.Op], e.ops != nil && !e.ops[r.Op]:
		return false
	case e.actors != nil && !e.actors[r.Actor], e.exclude[r.Actor]:
		return false
	}
	return true
}
