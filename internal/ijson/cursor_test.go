package ijson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// walk reads a whole text with a Cursor: arrays and objects opened,
// keys unquoted (refusing duplicates, as Check does), strings unquoted
// and compared with encoding/json's value, other values skipped.
func walk(t *testing.T, c *Cursor) error {
	t.Helper()
	switch c.Peek() {
	case '[', '{':
		kind, closing := c.Peek(), byte(']')
		if kind == '{' {
			closing = '}'
		}
		empty, err := c.Open(kind)
		keys := map[string]bool{}
		for more := !empty; more && err == nil; {
			if kind == '{' {
				err = walkKey(c, keys)
			}
			if err == nil {
				err = walk(t, c)
			}
			if err == nil {
				more, err = c.Next(closing)
			}
		}
		return err
	}
	lit, err := c.Value()
	if err == nil && lit[0] == '"' {
		var want string
		got, err := Unquote(lit)
		if jerr := json.Unmarshal(lit, &want); err != nil || jerr != nil || got != want {
			t.Errorf("Unquote(%s) = %q, %v; encoding/json %q, %v", lit, got, err, want, jerr)
		}
	}
	return err
}

func walkKey(c *Cursor, keys map[string]bool) error {
	lit, err := c.Key()
	if err != nil {
		return err
	}
	key, err := Unquote(lit)
	if err == nil && keys[key] {
		return &Error{Kind: ErrDuplicateKey}
	}
	keys[key] = true
	return err
}

// TestCursorAgreesWithCheck: a Cursor that walks a whole text refuses
// exactly what Check refuses, with the same kind of error.
func TestCursorAgreesWithCheck(t *testing.T) {
	t.Parallel()
	texts := []string{
		`{}`, `[]`, ` [ 1 , {"a" : [ ] } ] `, `{"a":1,"\u0061":2}`, `{"a":[1,]}`, `{"a" 1}`, `[1`, `"\ud800"`,
		"\"a\xffb\"", `1e400`, `{"k":"\u00e9\ud83d\ude00\n\/"}`, `[1] x`, "[]\x00", ``, `{"a":1,}`, `{,}`, `[,1]`, `nul`,
		strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	}
	for _, text := range texts {
		c := NewCursor([]byte(text))
		err := walk(t, &c)
		if err == nil {
			err = c.End()
		}
		want := Check([]byte(text))
		if !errors.Is(kindOf(err), kindOf(want)) {
			t.Errorf("%.40q: cursor %v, Check %v", text, err, want)
		}
	}
}

func kindOf(err error) error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind
	}
	return err
}

func TestUnquoteRefuses(t *testing.T) {
	t.Parallel()
	for _, lit := range []string{``, `a`, `"a`, `"a"b`, `"\ud800"`} {
		if _, err := Unquote([]byte(lit)); err == nil {
			t.Errorf("Unquote(%q) = nil error", lit)
		}
	}
}
