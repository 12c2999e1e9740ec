package triggers

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"github.com/eddy-run/eddy/predicate"
	"github.com/eddy-run/eddy/store"
)

// ErrBadInput marks an Subject that cannot be judged: no row, or a record
// whose properties are not JSON. A program that reads such a record
// raises an error wrapping it.
var ErrBadInput = errors.New("bad trigger input")

// vars is the CEL activation of one Subject. Each variable is converted on
// first use and kept, so the programs judging one row share the work and
// a row judged only on `row` never decodes its records. A vars is used
// by one goroutine.
type vars struct {
	in                  Subject
	row, entity, before ref.Val
	// stored reports that in.raw's changes were scanned (scanPrimary):
	// afterText and beforeText are the primary snapshots' texts.
	stored                bool
	afterText, beforeText []byte
	// bad is why in.raw's changes did not decode (see record).
	bad error
}

var _ interpreter.Activation = (*vars)(nil)

func newVars(in Subject) *vars { return &vars{in: in} }

// ResolveName implements interpreter.Activation.
func (v *vars) ResolveName(name string) (any, bool) {
	switch name {
	case "row":
		if v.row == nil {
			v.row = celValue(predicate.RowValue(v.in.Row))
		}
		return v.row, true
	case "entity":
		if v.entity == nil {
			v.entity = v.record("entity", snapAfter)
		}
		return v.entity, true
	case "before":
		if v.before == nil {
			v.before = v.record("before", snapBefore)
		}
		return v.before, true
	}
	return nil, false
}

// snap names one of the primary change's snapshots.
type snap uint8

const (
	snapAfter snap = iota
	snapBefore
)

// record returns the CEL value of the primary change's snapshot s. A raw
// commit's changes are read first (once): scanned for the primary
// snapshots' texts when they are in stored form, else decoded.
func (v *vars) record(name string, s snap) ref.Val {
	if raw := v.in.raw; raw != nil {
		v.in.raw = nil
		v.beforeText, v.afterText, v.stored = scanPrimary(&raw.Row, raw.Changes)
		if !v.stored {
			v.decodeRaw(raw)
		}
	}
	switch {
	case v.bad != nil:
		return types.WrapErr(fmt.Errorf("%w: %s: %w", ErrBadInput, name, v.bad))
	case v.stored:
		return v.storedValue(name, s)
	case s == snapAfter:
		return recordValue(name, v.in.Entity)
	}
	return recordValue(name, v.in.Before)
}

// decodeRaw decodes a raw commit's changes for Entity and Before.
func (v *vars) decodeRaw(raw *store.RawCommit) {
	changes, err := raw.DecodeChanges()
	if err != nil {
		v.bad = err
	} else if ch := primaryChange(&raw.Row, changes); ch != nil {
		v.in.Entity, v.in.Before = ch.After, ch.Before
	}
}

// storedValue returns the CEL value of the scanned snapshot s.
func (v *vars) storedValue(name string, s snap) ref.Val {
	text := v.afterText
	if s == snapBefore {
		text = v.beforeText
	}
	val, err := storedRecord(text)
	if err != nil {
		return types.WrapErr(fmt.Errorf("%w: %s: %w", ErrBadInput, name, err))
	}
	return val
}

// Parent implements interpreter.Activation.
func (v *vars) Parent() interpreter.Activation { return nil }

// recordValue is the CEL value of a record: {type, id, version,
// properties, links} with links as {rel, target: {type, id}}; null for
// nil; an error value wrapping ErrBadInput if its properties are not
// JSON.
func recordValue(name string, r *store.Record) ref.Val {
	if r == nil {
		return types.NullValue
	}
	var props any = map[string]any{}
	if len(r.Properties) > 0 {
		if err := json.Unmarshal(r.Properties, &props); err != nil {
			return types.WrapErr(fmt.Errorf("%w: %s properties: %w", ErrBadInput, name, err))
		}
	}
	links := make([]ref.Val, len(r.Links))
	for i, l := range r.Links {
		links[i] = linkCEL(types.String(l.Rel), types.String(l.Target.Type), types.String(l.Target.ID))
	}
	return recordCEL(types.String(r.Type), types.String(r.ID), types.Int(r.Version),
		celValue(props), types.NewRefValList(types.DefaultTypeAdapter, links))
}

// CEL keys of a record and its links (recordCEL, linkCEL), held as
// ref.Val so that using one as a map key boxes nothing.
var (
	celType       ref.Val = types.String("type")
	celID         ref.Val = types.String("id")
	celVersion    ref.Val = types.String("version")
	celProperties ref.Val = types.String("properties")
	celLinks      ref.Val = types.String("links")
	celRel        ref.Val = types.String("rel")
	celTarget     ref.Val = types.String("target")
)

// recordCEL is what a `when` sees of a record (entity, before): its type,
// id, version, properties and links. It is the one place that shape is
// written, for decoded records (recordValue) and stored ones
// (storedRecord).
func recordCEL(typ, id, version, props, links ref.Val) ref.Val {
	return types.NewRefValMap(types.DefaultTypeAdapter, map[ref.Val]ref.Val{
		celType: typ, celID: id, celVersion: version, celProperties: props, celLinks: links,
	})
}

// linkCEL is what a `when` sees of a link: {rel, target: {type, id}}.
func linkCEL(rel, typ, id ref.Val) ref.Val {
	target := types.NewRefValMap(types.DefaultTypeAdapter, map[ref.Val]ref.Val{celType: typ, celID: id})
	return types.NewRefValMap(types.DefaultTypeAdapter, map[ref.Val]ref.Val{celRel: rel, celTarget: target})
}

// celValue converts a decoded JSON value (and the row's int64 and
// time.Time fields) to CEL values once, so that the programs judging one
// row do not convert the same maps again on every field access.
func celValue(v any) ref.Val {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[ref.Val]ref.Val, len(v))
		for k, x := range v {
			m[types.String(k)] = celValue(x)
		}
		return types.NewRefValMap(types.DefaultTypeAdapter, m)
	case []any:
		l := make([]ref.Val, len(v))
		for i, x := range v {
			l[i] = celValue(x)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, l)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}
