package ijson

// Cursor reads one JSON text piece by piece with Check's strictness, for
// a reader that wants a few values of a large text without decoding the
// rest: it opens the arrays and objects it walks (Open, Key, Next) and
// takes or skips the values inside them (Value). The depth of what it
// opened counts toward MaxDepth. A Cursor's errors are *Error values, as
// Check's are; after one, the Cursor must not be used.
type Cursor struct {
	s scanner
}

// NewCursor returns a Cursor at the start of b.
func NewCursor(b []byte) Cursor { return Cursor{s: scanner{b: b}} }

// Bytes returns the whole text.
func (c *Cursor) Bytes() []byte { return c.s.b }

// Offset returns the byte offset of the next value (after whitespace).
func (c *Cursor) Offset() int {
	c.s.space()
	return c.s.i
}

// Peek returns the next byte after whitespace, 0 at the end of the text
// (End tells the end from a NUL byte).
func (c *Cursor) Peek() byte {
	c.s.space()
	if c.s.i == len(c.s.b) {
		return 0
	}
	return c.s.b[c.s.i]
}

// Value scans the next value and returns its text (without the
// whitespace around it).
func (c *Cursor) Value() ([]byte, error) {
	c.s.space()
	start := c.s.i
	if err := c.s.value(); err != nil {
		return nil, err
	}
	return c.s.b[start:c.s.i], nil
}

// Open enters the array or object that opens with kind ('[' or '{') at
// the cursor. empty reports one with no elements, already closed; else
// the cursor is at its first element (an array) or key (an object).
func (c *Cursor) Open(kind byte) (empty bool, err error) {
	if c.Peek() != kind {
		return false, c.s.fail(ErrSyntax, "want '%c'", kind)
	}
	if err := c.s.enter(); err != nil {
		return false, err
	}
	closing := byte(']')
	if kind == '{' {
		closing = '}'
	}
	if c.s.i < len(c.s.b) && c.s.b[c.s.i] == closing {
		c.s.i++
		c.s.depth--
		return true, nil
	}
	return false, nil
}

// Key scans an object key and the colon after it, and returns the key's
// text as written, quotes included (Unquote undoes its escapes). Key does
// not refuse a key the object had before: that is the caller's check.
func (c *Cursor) Key() ([]byte, error) {
	if c.Peek() != '"' {
		return nil, c.s.fail(ErrSyntax, "want an object key (a string)")
	}
	key, err := c.Value()
	if err != nil {
		return nil, err
	}
	c.s.space()
	if c.s.i >= len(c.s.b) || c.s.b[c.s.i] != ':' {
		return nil, c.s.fail(ErrSyntax, "want ':' after an object key")
	}
	c.s.i++
	return key, nil
}

// Next follows an element of the array or object being read: more is
// true after a comma (another element follows), false after the closing
// byte (']' or '}', which leaves it).
func (c *Cursor) Next(closing byte) (more bool, err error) {
	c.s.space()
	done, err := c.s.next(closing)
	return !done, err
}

// End reports an error unless only whitespace is left.
func (c *Cursor) End() error {
	if c.s.space(); c.s.i != len(c.s.b) {
		return c.s.fail(ErrSyntax, "data after the JSON value")
	}
	return nil
}

// Unquote returns the value of lit, a string's text as Value or Key
// return it.
func Unquote(lit []byte) (string, error) {
	s := scanner{b: lit}
	if len(lit) == 0 || lit[0] != '"' {
		return "", s.fail(ErrSyntax, "want a string")
	}
	v, err := s.str(true)
	if err == nil && s.i != len(lit) {
		err = s.fail(ErrSyntax, "data after the string")
	}
	return string(v), err
}
