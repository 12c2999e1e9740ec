package triggers

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/eddy-run/eddy/internal/ijson"
)

// storedObject is the CEL map of a stored snapshot's properties, read
// from their text as a `when` asks: a `when` usually reads a property
// or two, and building the whole map (every key and value unquoted,
// converted and hashed) cost more than the rest of judging a row. Its
// first lookup of a key scans the text for that key alone; anything else
// (a second lookup, iteration, size, equality, conversion) builds the
// map once, as celObject builds it, and answers from it. The text is
// what scanSnapshot accepted: strict I-JSON, so its keys are distinct
// and every value converts without error, and a lookup answers what the
// built map would. Its reads change it, so like the vars that hold it,
// a storedObject is used by one goroutine.
type storedObject struct {
	text    []byte
	scanned bool          // a lookup scanned the text
	built   traits.Mapper // the whole map, once built
	err     error         // why it could not be built (see whole)
}

var _ traits.Mapper = (*storedObject)(nil)

// whole returns the built map, building it the first time, or the error
// value of a text that did not convert. That cannot happen to text
// scanSnapshot accepted, but is shown as the error it is, not hidden.
func (o *storedObject) whole() (traits.Mapper, ref.Val) {
	if o.built == nil && o.err == nil {
		c := ijson.NewCursor(o.text)
		v, err := celObject(&c)
		if m, ok := v.(traits.Mapper); ok && err == nil {
			o.built = m
		} else {
			if err == nil {
				err = fmt.Errorf("a %T, not a map", v)
			}
			o.err = fmt.Errorf("%w: properties: %w", ErrBadInput, err)
		}
	}
	if o.err != nil {
		return nil, types.WrapErr(o.err)
	}
	return o.built, nil
}

// Find implements traits.Mapper: the first lookup of a string key scans
// the text; later ones, and other keys, use the built map.
func (o *storedObject) Find(key ref.Val) (ref.Val, bool) {
	if k, ok := key.(types.String); ok && !o.scanned && o.built == nil {
		o.scanned = true
		if v, found, err := findMember(o.text, string(k)); err == nil {
			return v, found
		}
	}
	m, bad := o.whole()
	if bad != nil {
		return bad, false
	}
	return m.Find(key)
}

// findMember returns the CEL value of member key of the object text.
func findMember(text []byte, key string) (ref.Val, bool, error) {
	c := ijson.NewCursor(text)
	var val ref.Val
	found := false
	err := elements(&c, '{', func() error {
		lit, err := c.Key()
		if err != nil {
			return err
		}
		if found || !sameString(lit, key) {
			_, err = c.Value()
			return err
		}
		found = true
		val, err = celJSON(&c)
		return err
	})
	return val, found, err
}

// Get implements traits.Indexer.
func (o *storedObject) Get(key ref.Val) ref.Val {
	if v, ok := o.Find(key); ok {
		return v
	}
	m, bad := o.whole()
	if bad != nil {
		return bad
	}
	return m.Get(key)
}

// Contains implements traits.Container.
func (o *storedObject) Contains(key ref.Val) ref.Val {
	v, found := o.Find(key)
	if found {
		return types.True
	}
	if v != nil { // an error or unknown
		return v
	}
	return types.False
}

// Iterator implements traits.Iterable.
func (o *storedObject) Iterator() traits.Iterator {
	m, bad := o.whole()
	if bad != nil {
		return emptyMap.Iterator()
	}
	return m.Iterator()
}

// Size implements traits.Sizer.
func (o *storedObject) Size() ref.Val {
	m, bad := o.whole()
	if bad != nil {
		return bad
	}
	return m.Size()
}

// ConvertToNative implements ref.Val.
func (o *storedObject) ConvertToNative(t reflect.Type) (any, error) {
	m, _ := o.whole()
	if m == nil {
		return nil, o.err
	}
	return m.ConvertToNative(t)
}

// ConvertToType implements ref.Val.
func (o *storedObject) ConvertToType(t ref.Type) ref.Val {
	m, bad := o.whole()
	if bad != nil {
		return bad
	}
	return m.ConvertToType(t)
}

// Equal implements ref.Val.
func (o *storedObject) Equal(other ref.Val) ref.Val {
	m, bad := o.whole()
	if bad != nil {
		return bad
	}
	return m.Equal(other)
}

// Type implements ref.Val.
func (o *storedObject) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (o *storedObject) Value() any {
	m, bad := o.whole()
	if bad != nil {
		return bad.Value()
	}
	return m.Value()
}

// IsZeroValue implements traits.Zeroer, as a built map does.
func (o *storedObject) IsZeroValue() bool {
	m, _ := o.whole()
	z, ok := m.(traits.Zeroer)
	return ok && z.IsZeroValue()
}
