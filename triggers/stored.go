package triggers

import (
	"bytes"
	"errors"
	"strconv"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/eddy-run/eddy/internal/ijson"
	"github.com/eddy-run/eddy/store"
)

// A `when` that reads entity or before needs only the primary change's
// snapshots. scanPrimary finds them in a commit's stored changes without
// decoding the other changes, and storedRecord builds a snapshot's CEL
// value from its text. They read the form the store writes: strict
// I-JSON (ijson) whose changes, snapshots and links are objects of known,
// distinct keys, each holding a value of its field's JSON type. Any
// other text, including every text encoding/json refuses, is not read
// here: the caller decodes it with encoding/json (vars.decodeRaw), so
// values and errors are the decoder's either way.

// errNotStored reports text outside the form scanPrimary reads.
var errNotStored = errors.New("not in stored form")

// storedChange is what scanPrimary keeps of one change: its type and id
// as written (string texts) and its snapshots' texts (nil when null or
// absent).
type storedChange struct {
	typ, id, before, after []byte
}

// scanPrimary returns the before and after texts of the primary change
// (PrimaryChange) of the stored changes text (nil for a null snapshot or
// a commit without changes); ok false when the text is not in the form
// it reads.
func scanPrimary(r *store.Row, text []byte) (before, after []byte, ok bool) {
	var few [2]storedChange
	changes, err := scanChanges(text, few[:0])
	if err != nil {
		return nil, nil, false
	}
	i := primaryIndex(r, len(changes), func(i int, typ, id string) bool {
		return sameString(changes[i].typ, typ) && sameString(changes[i].id, id)
	})
	if i < 0 {
		return nil, nil, true
	}
	return changes[i].before, changes[i].after, true
}

// scanChanges appends the changes of a stored changes array to out.
func scanChanges(text []byte, out []storedChange) ([]storedChange, error) {
	c := ijson.NewCursor(text)
	err := elements(&c, '[', func() error {
		ch, err := scanChange(&c)
		out = append(out, ch)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, c.End()
}

// elements reads the array or object opening with kind at the cursor,
// calling elem at each element (an object's: at its key) until one fails.
func elements(c *ijson.Cursor, kind byte, elem func() error) error {
	closing := byte(']')
	if kind == '{' {
		closing = '}'
	}
	empty, err := c.Open(kind)
	for more := !empty; more && err == nil; {
		if err = elem(); err == nil {
			more, err = c.Next(closing)
		}
	}
	return err
}

// changeKeys and recordKeys are the keys of a stored change and snapshot
// (store.Change, store.Record), as written.
var (
	changeKeys = []string{`"ordinal"`, `"kind"`, `"type"`, `"id"`, `"version"`, `"before"`, `"after"`, `"conflictGroups"`}
	recordKeys = []string{`"type"`, `"id"`, `"version"`, `"properties"`, `"links"`, `"createdAt"`, `"updatedAt"`}
	linkKeys   = []string{`"rel"`, `"target"`}
	targetKeys = []string{`"type"`, `"id"`}
)

// scanChange scans one change object.
func scanChange(c *ijson.Cursor) (storedChange, error) {
	var ch storedChange
	err := scanObject(c, changeKeys, func(k int) (err error) {
		switch k {
		case 0, 4:
			err = scanInt(c)
		case 1:
			_, err = scanString(c)
		case 2:
			ch.typ, err = scanString(c)
		case 3:
			ch.id, err = scanString(c)
		case 5:
			ch.before, err = scanSnapshot(c)
		case 6:
			ch.after, err = scanSnapshot(c)
		default:
			err = scanArray(c, func() error { _, err := scanString(c); return err })
		}
		return err
	})
	return ch, err
}

// scanSnapshot scans a snapshot (a record object or null) and returns its
// text, nil for null.
func scanSnapshot(c *ijson.Cursor) ([]byte, error) {
	if c.Peek() == 'n' {
		_, err := c.Value()
		return nil, err
	}
	start := c.Offset()
	err := scanObject(c, recordKeys, func(k int) (err error) {
		switch k {
		case 0, 1:
			_, err = scanString(c)
		case 2:
			err = scanInt(c)
		case 3:
			_, err = c.Value()
		case 4:
			err = scanArray(c, func() error { return scanLink(c) })
		default:
			err = scanTime(c)
		}
		return err
	})
	return c.Bytes()[start:c.Offset()], err
}

// scanLink scans one link object.
func scanLink(c *ijson.Cursor) error {
	return scanObject(c, linkKeys, func(k int) error {
		if k == 1 {
			return scanObject(c, targetKeys, func(int) error { _, err := scanString(c); return err })
		}
		_, err := scanString(c)
		return err
	})
}

// scanObject scans an object whose keys are among keys, each at most
// once, calling field with the index of each key to scan its value.
func scanObject(c *ijson.Cursor, keys []string, field func(k int) error) error {
	var seen uint32
	return elements(c, '{', func() error {
		key, err := c.Key()
		if err != nil {
			return err
		}
		k := keyIndex(keys, key)
		if k < 0 || seen&(1<<k) != 0 {
			return errNotStored
		}
		seen |= 1 << k
		return field(k)
	})
}

func keyIndex(keys []string, key []byte) int {
	for i, k := range keys {
		if string(key) == k {
			return i
		}
	}
	return -1
}

// scanArray scans an array (null: none), calling elem for each element.
func scanArray(c *ijson.Cursor, elem func() error) error {
	if c.Peek() == 'n' {
		_, err := c.Value()
		return err
	}
	return elements(c, '[', elem)
}

// scanString scans a string and returns its text.
func scanString(c *ijson.Cursor) ([]byte, error) {
	if c.Peek() != '"' {
		return nil, errNotStored
	}
	return c.Value()
}

// scanInt scans an integer that an int64 holds: at most 18 digits, no
// fraction or exponent.
func scanInt(c *ijson.Cursor) error {
	lit, err := c.Value()
	if err != nil {
		return err
	}
	digits := bytes.TrimPrefix(lit, []byte("-"))
	if len(digits) == 0 || len(digits) > 18 || bytes.ContainsFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) {
		return errNotStored
	}
	return nil
}

// scanTime scans a time as encoding/json decodes a time.Time: null, or
// a string time.Time.UnmarshalJSON takes.
func scanTime(c *ijson.Cursor) error {
	lit, err := c.Value()
	switch {
	case err != nil:
		return err
	case lit[0] == 'n':
		return nil
	case lit[0] != '"':
		return errNotStored
	}
	var t time.Time
	if t.UnmarshalJSON(lit) != nil {
		return errNotStored
	}
	return nil
}

// sameString reports whether the string text lit stands for s.
func sameString(lit []byte, s string) bool {
	if lit == nil {
		return s == ""
	}
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1:len(lit)-1]) == s
	}
	v, err := ijson.Unquote(lit)
	return err == nil && v == s
}

// storedRecord returns the CEL value recordValue gives the record a
// snapshot's text (as scanSnapshot accepted it) decodes to; null for nil.
// A field the text leaves out shows as recordValue shows a zero field.
func storedRecord(text []byte) (ref.Val, error) {
	if text == nil {
		return types.NullValue, nil
	}
	f := [...]ref.Val{types.String(""), types.String(""), types.Int(0), emptyMap, emptyList}
	c := ijson.NewCursor(text)
	err := scanObject(&c, recordKeys, func(k int) (err error) {
		switch k {
		case 3:
			f[k], err = storedProperties(&c)
		case 0, 1:
			f[k], err = celJSON(&c)
		case 2:
			f[k], err = celInt(&c)
		case 4:
			f[k], err = celLinkList(&c)
		default:
			_, err = c.Value()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return recordCEL(f[0], f[1], f[2], f[3], f[4]), nil
}

// storedProperties reads a snapshot's properties: an object as a
// storedObject over its text, any other value as celJSON reads it.
func storedProperties(c *ijson.Cursor) (ref.Val, error) {
	if c.Peek() != '{' {
		return celJSON(c)
	}
	text, err := c.Value()
	if err != nil {
		return nil, err
	}
	return &storedObject{text: text}, nil
}

// emptyMap and emptyList are the CEL values of absent properties and
// links; CEL maps and lists are immutable, so one value serves all.
var (
	emptyMap  = types.NewRefValMap(types.DefaultTypeAdapter, map[ref.Val]ref.Val{})
	emptyList = types.NewRefValList(types.DefaultTypeAdapter, []ref.Val{})
)

// celInt reads an integer scanInt accepted.
func celInt(c *ijson.Cursor) (ref.Val, error) {
	lit, err := c.Value()
	if err != nil {
		return nil, err
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	return types.Int(n), err
}

// celLinkList reads a snapshot's links as recordValue shows them
// (linkCEL each).
func celLinkList(c *ijson.Cursor) (ref.Val, error) {
	var links []ref.Val
	err := scanArray(c, func() error {
		rel := ref.Val(types.String(""))
		target := [2]ref.Val{types.String(""), types.String("")} // type, id
		err := scanObject(c, linkKeys, func(k int) (err error) {
			if k == 0 {
				rel, err = celJSON(c)
				return err
			}
			return scanObject(c, targetKeys, func(k int) (err error) {
				target[k], err = celJSON(c)
				return err
			})
		})
		links = append(links, linkCEL(rel, target[0], target[1]))
		return err
	})
	if links == nil {
		return emptyList, err
	}
	return types.NewRefValList(types.DefaultTypeAdapter, links), err
}

// celJSON reads any JSON value as the CEL value celValue gives what
// encoding/json decodes it to: objects (the last of equal keys wins),
// arrays, strings, float64 numbers, bools and null.
func celJSON(c *ijson.Cursor) (ref.Val, error) {
	switch c.Peek() {
	case '{':
		return celObject(c)
	case '[':
		return celArray(c)
	}
	lit, err := c.Value()
	if err != nil {
		return nil, err
	}
	switch lit[0] {
	case '"':
		s, err := ijson.Unquote(lit)
		return types.String(s), err
	case 't':
		return types.True, nil
	case 'f':
		return types.False, nil
	case 'n':
		return types.NullValue, nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	return types.Double(f), err
}

func celObject(c *ijson.Cursor) (ref.Val, error) {
	m := map[ref.Val]ref.Val{}
	err := elements(c, '{', func() error {
		key, err := c.Key()
		if err != nil {
			return err
		}
		k, err := ijson.Unquote(key)
		if err != nil {
			return err
		}
		v, err := celJSON(c)
		m[types.String(k)] = v
		return err
	})
	return types.NewRefValMap(types.DefaultTypeAdapter, m), err
}

func celArray(c *ijson.Cursor) (ref.Val, error) {
	l := []ref.Val{}
	err := elements(c, '[', func() error {
		v, err := celJSON(c)
		l = append(l, v)
		return err
	})
	return types.NewRefValList(types.DefaultTypeAdapter, l), err
}
