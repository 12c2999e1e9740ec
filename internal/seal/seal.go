// Package seal makes the opaque, authenticated tokens that views and the
// journal hand to clients (cursors, bootstrap and fetch tokens): a version
// byte, a kind byte, a payload and a 16-byte HMAC-SHA256 tag, in unpadded
// base64url. The tag key is derived from a server secret and what the
// token is bound to (a space and a view, or a space, a user and an
// application), so a token presented under another binding fails exactly
// as a damaged one does. Encoding is deterministic: the same payload is
// always the same string, so a retried page repeats its tokens byte for
// byte.
package seal

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
)

const (
	version = 1
	// TagLen is the length of a token's tag.
	TagLen = 16
	// MaxLen bounds the tokens Open accepts, before any work.
	MaxLen = 1024
)

// ErrBad is any token this codec did not seal: malformed, truncated,
// tampered, of another kind or of another binding.
var ErrBad = errors.New("not a token of this binding")

// Digest hashes length-prefixed parts, so no two lists of parts collide
// by concatenation.
func Digest(parts ...string) []byte {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range parts {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write([]byte(p))
	}
	return h.Sum(nil)
}

// Codec seals and opens the tokens of one binding.
type Codec struct{ key []byte }

// New returns the codec of the binding parts (a label naming the token
// family and version first, e.g. "eddy views v1") under secret.
func New(secret []byte, parts ...string) Codec {
	m := hmac.New(sha256.New, secret)
	m.Write(Digest(parts...))
	return Codec{key: m.Sum(nil)}
}

// Seal returns the token of kind holding payload.
func (c Codec) Seal(kind byte, payload []byte) string {
	buf := make([]byte, 0, 2+len(payload)+TagLen)
	buf = append(buf, version, kind)
	buf = append(buf, payload...)
	m := hmac.New(sha256.New, c.key)
	m.Write(buf)
	buf = m.Sum(buf)[:len(buf)+TagLen]
	return base64.RawURLEncoding.EncodeToString(buf)
}

// Open checks s's tag and kind and returns its payload, or ErrBad.
func (c Codec) Open(kind byte, s string) ([]byte, error) {
	// The decoder skips CR and LF: refuse them, so one token has one
	// spelling.
	if len(s) > MaxLen || strings.ContainsAny(s, "\r\n") {
		return nil, ErrBad
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(raw) < 2+TagLen {
		return nil, ErrBad
	}
	body, tag := raw[:len(raw)-TagLen], raw[len(raw)-TagLen:]
	m := hmac.New(sha256.New, c.key)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil)[:TagLen], tag) || body[0] != version || body[1] != kind {
		return nil, ErrBad
	}
	return body[2:], nil
}

// Reader consumes a payload field by field; the first shortfall sticks
// and Done then reports it.
type Reader struct {
	p   []byte
	bad bool
}

// NewReader returns a Reader of p.
func NewReader(p []byte) *Reader { return &Reader{p: p} }

// Bytes fills dst.
func (r *Reader) Bytes(dst []byte) {
	if len(r.p) < len(dst) {
		r.bad = true
		return
	}
	r.p = r.p[copy(dst, r.p):]
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	v, n := binary.Uvarint(r.p)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.p = r.p[n:]
	return v
}

// Int reads an unsigned varint that fits an int64 (and an int on 64-bit
// hosts): at most 1<<62.
func (r *Reader) Int() int64 {
	v := r.Uvarint()
	if v > 1<<62 {
		r.bad = true
		return 0
	}
	return int64(v)
}

// Varint reads a signed varint.
func (r *Reader) Varint() int64 {
	v, n := binary.Varint(r.p)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.p = r.p[n:]
	return v
}

// Str reads a length-prefixed string.
func (r *Reader) Str() string {
	n := r.Uvarint()
	if r.bad || n > uint64(len(r.p)) {
		r.bad = true
		return ""
	}
	s := string(r.p[:n])
	r.p = r.p[n:]
	return s
}

// AppendStr appends s as Str reads it.
func AppendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// Done reports whether the payload was consumed exactly, with no
// shortfall.
func (r *Reader) Done() bool { return !r.bad && len(r.p) == 0 }

// SecretStore keeps named server secrets (store.Store is one): Secret
// returns the secret name, storing gen's answer first when it has none.
type SecretStore interface {
	Secret(ctx context.Context, name string, gen func() ([]byte, error)) ([]byte, error)
}

// Secret is one named server secret, read from its store on first use
// (created there, 32 random bytes, if the store has none) and kept.
type Secret struct {
	st   SecretStore
	name string
	mu   sync.Mutex
	b    []byte // guarded by mu; nil until first read
}

// NewSecret returns the secret name of st.
func NewSecret(st SecretStore, name string) *Secret { return &Secret{st: st, name: name} }

// Get returns the secret's bytes.
func (s *Secret) Get(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b == nil {
		b, err := s.st.Secret(ctx, s.name, func() ([]byte, error) {
			b := make([]byte, 32)
			_, err := rand.Read(b)
			return b, err
		})
		if err != nil {
			return nil, fmt.Errorf("read secret %s: %w", s.name, err)
		}
		s.b = b
	}
	return s.b, nil
}
