package seal

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealOpen(t *testing.T) {
	c := New([]byte("secret"), "test v1", "space", "view")
	payload := AppendStr([]byte{1, 2, 3}, "id")
	tok := c.Seal('c', payload)
	if tok != c.Seal('c', payload) {
		t.Fatal("sealing is not deterministic")
	}
	got, err := c.Open('c', tok)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("open: %x, %v", got, err)
	}
	r := NewReader(got)
	var head [3]byte
	r.Bytes(head[:])
	if s := r.Str(); s != "id" || !r.Done() || head != [3]byte{1, 2, 3} {
		t.Fatalf("read back %v %q done=%v", head, s, r.Done())
	}
	for name, bad := range map[string]func() ([]byte, error){
		"another kind":        func() ([]byte, error) { return c.Open('k', tok) },
		"another binding":     func() ([]byte, error) { return New([]byte("secret"), "test v1", "space", "other").Open('c', tok) },
		"parts re-split":      func() ([]byte, error) { return New([]byte("secret"), "test v1", "spacev", "iew").Open('c', tok) },
		"another secret":      func() ([]byte, error) { return New([]byte("other"), "test v1", "space", "view").Open('c', tok) },
		"truncated":           func() ([]byte, error) { return c.Open('c', tok[:len(tok)-1]) },
		"one character off":   func() ([]byte, error) { return c.Open('c', flip(tok)) },
		"not base64url":       func() ([]byte, error) { return c.Open('c', "not a token!") },
		"too long to look at": func() ([]byte, error) { return c.Open('c', string(make([]byte, MaxLen+1))) },
	} {
		if _, err := bad(); !errors.Is(err, ErrBad) {
			t.Errorf("%s: %v, want ErrBad", name, err)
		}
	}
}

func TestReaderShortfall(t *testing.T) {
	r := NewReader([]byte{0x05, 'a'}) // a string of 5 bytes with 1 present
	if r.Str(); r.Done() {
		t.Fatal("a short string reads as done")
	}
	r = NewReader([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	if r.Int(); r.Done() {
		t.Fatal("an int above 1<<62 reads as done")
	}
	r = NewReader([]byte{1, 2})
	if r.Uvarint(); r.Done() {
		t.Fatal("a payload with bytes left reads as done")
	}
}

func flip(s string) string {
	b := []byte(s)
	if b[3] == 'A' {
		b[3] = 'B'
	} else {
		b[3] = 'A'
	}
	return string(b)
}

func FuzzOpen(f *testing.F) {
	c := New([]byte("secret"), "fuzz v1")
	f.Add(c.Seal('c', []byte{1, 2, 3}))
	f.Add("")
	f.Add("AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := c.Open('c', s)
		if err != nil {
			return
		}
		if c.Seal('c', p) != s {
			t.Fatalf("%q opened but does not reseal to itself", s)
		}
	})
}
