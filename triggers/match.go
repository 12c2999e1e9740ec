package triggers

import (
	"github.com/google/cel-go/common/types"
)

// matcher holds one row's variables and the lazily evaluated values of
// the index's paths, both made on first use: a row no trigger can match
// allocates neither.
type matcher struct {
	x     *Index
	in    Subject
	v     *vars
	paths []pathVal
}

// vars returns the row's variables.
func (m *matcher) vars() *vars {
	if m.v == nil {
		m.v = newVars(m.in)
	}
	return m.v
}

// pathVal is one path's value on the current row.
type pathVal struct {
	state  pathState
	key    valueKey
	hasKey bool
	null   bool
}

type pathState uint8

const (
	pathUnset   pathState = iota
	pathValue             // evaluated to a value
	pathMissing           // "no such key"
	pathError             // any other error
)

// path evaluates path id once per row.
func (m *matcher) path(id int) pathVal {
	if m.paths == nil {
		m.paths = make([]pathVal, len(m.x.paths))
	}
	v := &m.paths[id]
	if v.state != pathUnset {
		return *v
	}
	out, _, err := m.x.paths[id].Eval(m.vars())
	switch {
	case err != nil && isMissingKey(err):
		v.state = pathMissing
	case err != nil:
		v.state = pathError
	default:
		v.state = pathValue
		v.key, v.hasKey = keyOf(out)
		v.null = out == types.NullValue
	}
	return *v
}

// candidates appends the triggers of b that the row's path values do not
// rule out (cases 1 to 4 in index.go).
func (m *matcher) candidates(b *bucket, out []int32) []int32 {
	out = append(out, b.residual...)
	for _, eq := range b.eqs {
		v := m.path(eq.pathID)
		switch {
		case v.state == pathValue && v.hasKey:
			out = append(out, eq.byKey[v.key]...)
		case v.state == pathMissing:
			out = append(out, eq.onMissing...)
		case v.state == pathError:
			out = append(out, eq.all...)
		}
	}
	return out
}

// skip reports whether one of e's guards proves that its program would
// answer not_matched on this row (cases 1 and 2 in index.go).
func (m *matcher) skip(e *entry) bool {
	for _, g := range e.guards {
		v := m.path(g.pathID)
		switch v.state {
		case pathValue:
			if g.falseOn(v) {
				return true
			}
		case pathMissing:
			if g.first && e.prg.bounded {
				return true
			}
		}
	}
	return false
}

// falseOn reports whether the guard's conjunct is certainly false on a
// path value.
func (g entryGuard) falseOn(v pathVal) bool {
	if g.kind == guardNotNull {
		return v.null
	}
	return !v.hasKey || v.key != g.key
}
