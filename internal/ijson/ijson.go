// Package ijson is the one strict JSON gate every request body passes:
// it accepts exactly the texts that mean the same thing to every JSON
// reader (I-JSON, RFC 7493) and refuses the rest with the byte offset of
// the problem.
//
// encoding/json is lenient where readers disagree: it replaces invalid
// UTF-8 and lone surrogate escapes with U+FFFD, lets the last of two
// equal object keys win, and keeps a number such as 1e400 that no
// float64 holds (as json.Number or json.RawMessage), which every later
// reader then fails on. Check refuses all three, at any depth, so a body
// that passes it decodes the same way in Go, JavaScript and anything else.
package ijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of arrays and objects (encoding/json's own
// limit).
const MaxDepth = 10000

// The kinds of refusal; an *Error wraps exactly one.
var (
	ErrSyntax       = errors.New("malformed JSON")
	ErrInvalidUTF8  = errors.New("invalid UTF-8")
	ErrDuplicateKey = errors.New("duplicate object key")
	ErrNumberRange  = errors.New("number out of range")
	ErrDepth        = errors.New("nested too deeply")
)

// Error is a refused JSON text: what is wrong (Kind, one of the Err
// values) and where (Offset, in bytes from the start).
type Error struct {
	Kind   error
	Offset int
	Detail string
}

// Error implements error.
func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%v at byte %d", e.Kind, e.Offset)
	}
	return fmt.Sprintf("%v at byte %d: %s", e.Kind, e.Offset, e.Detail)
}

// Unwrap returns Kind.
func (e *Error) Unwrap() error { return e.Kind }

// Check reports whether b is exactly one I-JSON value, optionally
// surrounded by whitespace: well-formed JSON, valid UTF-8 with no lone
// surrogate escapes, no object with two equal keys (compared after
// unescaping), no number beyond float64's range, at most MaxDepth deep.
func Check(b []byte) error {
	s := scanner{b: b}
	s.space()
	if s.i == len(b) {
		return s.fail(ErrSyntax, "empty JSON text")
	}
	if err := s.value(); err != nil {
		return err
	}
	s.space()
	if s.i != len(b) {
		return s.fail(ErrSyntax, "data after the JSON value")
	}
	return nil
}

// Unmarshal checks data and decodes it into v with encoding/json.
func Unmarshal(data []byte, v any) error {
	if err := Check(data); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// UnmarshalStrict is Unmarshal refusing object fields v has no place for.
func UnmarshalStrict(data []byte, v any) error {
	if err := Check(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// scanner walks one JSON text.
type scanner struct {
	b     []byte
	i     int
	depth int
}

func (s *scanner) fail(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Offset: s.i, Detail: fmt.Sprintf(format, args...)}
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) value() error {
	if s.i >= len(s.b) {
		return s.fail(ErrSyntax, "unexpected end of JSON")
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		_, err := s.str(false)
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	default:
		return s.fail(ErrSyntax, "unexpected character %q", c)
	}
}

func (s *scanner) literal(word string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return s.fail(ErrSyntax, "invalid literal (want %s)", word)
	}
	s.i += len(word)
	return nil
}

func (s *scanner) enter() error {
	if s.depth++; s.depth > MaxDepth {
		return s.fail(ErrDepth, "more than %d nested arrays and objects", MaxDepth)
	}
	s.i++
	s.space()
	return nil
}

func (s *scanner) array() error {
	if err := s.enter(); err != nil {
		return err
	}
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		s.depth--
		return nil
	}
	for {
		if err := s.value(); err != nil {
			return err
		}
		s.space()
		done, err := s.next(']')
		if err != nil || done {
			return err
		}
	}
}

// next consumes a comma (false) or the closing byte (true).
func (s *scanner) next(closing byte) (bool, error) {
	if s.i >= len(s.b) {
		return false, s.fail(ErrSyntax, "unexpected end of JSON")
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		s.space()
		return false, nil
	case closing:
		s.i++
		s.depth--
		return true, nil
	}
	return false, s.fail(ErrSyntax, "want ',' or '%c', got %q", closing, s.b[s.i])
}

func (s *scanner) object() error {
	if err := s.enter(); err != nil {
		return err
	}
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		s.depth--
		return nil
	}
	var keys keySet
	for {
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return s.fail(ErrSyntax, "want an object key (a string)")
		}
		at := s.i
		key, err := s.str(true)
		if err != nil {
			return err
		}
		if !keys.add(key) {
			return &Error{Kind: ErrDuplicateKey, Offset: at, Detail: strconv.Quote(string(key))}
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return s.fail(ErrSyntax, "want ':' after an object key")
		}
		s.i++
		s.space()
		if err := s.value(); err != nil {
			return err
		}
		s.space()
		done, err := s.next('}')
		if err != nil || done {
			return err
		}
	}
}

// keySet holds an object's keys: the first few in place (unescaped keys
// are the text's own bytes, so small objects allocate nothing), a map
// beyond.
type keySet struct {
	n    int
	few  [8][]byte
	many map[string]struct{}
}

func (k *keySet) add(key []byte) bool {
	if k.many != nil {
		if _, dup := k.many[string(key)]; dup {
			return false
		}
		k.many[string(key)] = struct{}{}
		return true
	}
	for _, have := range k.few[:k.n] {
		if bytes.Equal(have, key) {
			return false
		}
	}
	if k.n < len(k.few) {
		k.few[k.n] = key
		k.n++
		return true
	}
	k.many = make(map[string]struct{}, 4*len(k.few))
	for _, have := range k.few {
		k.many[string(have)] = struct{}{}
	}
	k.many[string(key)] = struct{}{}
	return true
}

// plain marks the bytes a string holds as themselves: printable ASCII
// other than the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str scans a string at s.i; with decode it returns its unescaped value
// (the text's own bytes when it has no escape).
func (s *scanner) str(decode bool) ([]byte, error) {
	s.i++ // the opening quote
	start := s.i
	var out []byte // the unescaped value once an escape is seen
	for s.i < len(s.b) {
		if out == nil { // the common run: bytes that stand for themselves
			i, b := s.i, s.b
			for i < len(b) && plain[b[i]] {
				i++
			}
			if s.i = i; i == len(b) {
				break
			}
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			end := s.i
			s.i++
			switch {
			case !decode:
				return nil, nil
			case out == nil:
				return s.b[start:end], nil
			default:
				return out, nil
			}
		case c == '\\':
			if decode && out == nil {
				out = append([]byte(nil), s.b[start:s.i]...)
			}
			r, err := s.escape()
			if err != nil {
				return nil, err
			}
			if decode {
				out = utf8.AppendRune(out, r)
			}
		case c < 0x20:
			return nil, s.fail(ErrSyntax, "control character %q in a string", c)
		case c < utf8.RuneSelf:
			if out != nil {
				out = append(out, c)
			}
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, s.fail(ErrInvalidUTF8, "byte 0x%02x in a string", c)
			}
			if out != nil {
				out = append(out, s.b[s.i:s.i+size]...)
			}
			s.i += size
		}
	}
	return nil, s.fail(ErrSyntax, "unterminated string")
}

// escape scans one escape sequence at s.i (the backslash) and returns the
// character it stands for; a surrogate pair is one character.
func (s *scanner) escape() (rune, error) {
	if s.i+1 >= len(s.b) {
		return 0, s.fail(ErrSyntax, "unterminated string")
	}
	switch c := s.b[s.i+1]; c {
	case '"', '\\', '/':
		s.i += 2
		return rune(c), nil
	case 'b':
		s.i += 2
		return '\b', nil
	case 'f':
		s.i += 2
		return '\f', nil
	case 'n':
		s.i += 2
		return '\n', nil
	case 'r':
		s.i += 2
		return '\r', nil
	case 't':
		s.i += 2
		return '\t', nil
	case 'u':
		return s.unicodeEscape()
	default:
		return 0, s.fail(ErrSyntax, "invalid escape \\%c", c)
	}
}

// unicodeEscape scans \uXXXX, and its low half when XXXX is a high
// surrogate. A lone surrogate has no UTF-8 form: it is refused.
func (s *scanner) unicodeEscape() (rune, error) {
	at := s.i
	r, ok := hex4(s.b[s.i+2:])
	if !ok {
		return 0, s.fail(ErrSyntax, "invalid \\u escape")
	}
	s.i += 6
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	if r < 0xdc00 && s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
		if lo, ok := hex4(s.b[s.i+2:]); ok && lo >= 0xdc00 && lo <= 0xdfff {
			s.i += 6
			return utf16.DecodeRune(r, lo), nil
		}
	}
	return 0, &Error{Kind: ErrInvalidUTF8, Offset: at, Detail: fmt.Sprintf("lone surrogate \\u%04x", r)}
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number scans a number and refuses one no float64 holds.
func (s *scanner) number() error {
	start := s.i
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return s.fail(ErrSyntax, "invalid number")
	}
	exact := true // an integer of few digits: always in range
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return s.fail(ErrSyntax, "invalid number: want digits after '.'")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		exact = false
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return s.fail(ErrSyntax, "invalid number: want digits in the exponent")
		}
	}
	if exact && s.i-start <= 300 {
		return nil
	}
	if _, err := strconv.ParseFloat(string(s.b[start:s.i]), 64); errors.Is(err, strconv.ErrRange) {
		return &Error{Kind: ErrNumberRange, Offset: start, Detail: fmt.Sprintf("%.40s is beyond float64 (about ±1.8e308)", s.b[start:s.i])}
	}
	return nil
}

// digits consumes [0-9]* and reports whether there was one.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}
