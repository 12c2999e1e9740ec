package views

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// Tokens and cursors are opaque to clients: a version byte, a kind byte,
// the context binding, the kind's payload, and an HMAC-SHA256 tag (16
// bytes) under a key derived from the server secret, the space and the
// view, all in unpadded base64url. A token of another space or view, or
// one changed by a single bit, fails the tag. Encoding is deterministic,
// so the same position always gives the same string: a retried page
// repeats its tokens and cursor byte for byte.

// Token kinds.
const (
	kindCursor = 'c'
	kindKeyset = 'k'
	kindFrozen = 'f'
)

const (
	tokenVersion = 1
	tagLen       = 16
	sessionIDLen = 16
	// maxTokenLen bounds what decode accepts, before any work.
	maxTokenLen = 1024
)

// errBadToken is any token that is not one this server issued for this
// space and view: malformed, tampered, another space's or view's.
var errBadToken = errors.New("not a token of this view")

// cursor is a view cursor: a position in the source log.
type cursor struct {
	bind binding
	seq  int64
}

// keysetToken positions a keyset bootstrap: the snapshot's watermark, the
// page size, how many records earlier pages held, and the last entity
// consumed (the index of its type among the view's types, and its id).
type keysetToken struct {
	bind      binding
	watermark int64
	pageSize  int
	offset    int64
	typeIndex int
	lastID    string
}

// frozenToken names one page of a stored frozen session.
type frozenToken struct {
	bind    binding
	session [sessionIDLen]byte
	page    int
	expires time.Time
}

// tokenKey derives the tag key of one view of one space.
func tokenKey(secret []byte, space, view string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(digest("eddy views v1", space, view))
	return m.Sum(nil)
}

// codec encodes and decodes the tokens of one view of one space.
type codec struct{ key []byte }

func (c codec) seal(kind byte, b binding, payload []byte) string {
	buf := make([]byte, 0, 2+bindingLen+len(payload)+tagLen)
	buf = append(buf, tokenVersion, kind)
	buf = append(buf, b.fingerprint[:]...)
	buf = append(buf, b.filter[:]...)
	buf = append(buf, b.schema[:]...)
	buf = append(buf, b.epoch[:]...)
	buf = append(buf, payload...)
	m := hmac.New(sha256.New, c.key)
	m.Write(buf)
	buf = m.Sum(buf)[:len(buf)+tagLen]
	return base64.RawURLEncoding.EncodeToString(buf)
}

// open checks s's tag and kind and returns its binding and payload.
func (c codec) open(kind byte, s string) (binding, []byte, error) {
	var b binding
	if len(s) > maxTokenLen {
		return b, nil, errBadToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 2+bindingLen+tagLen {
		return b, nil, errBadToken
	}
	body, tag := raw[:len(raw)-tagLen], raw[len(raw)-tagLen:]
	m := hmac.New(sha256.New, c.key)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil)[:tagLen], tag) || body[0] != tokenVersion || body[1] != kind {
		return b, nil, errBadToken
	}
	p := body[2:]
	p = p[copy(b.fingerprint[:], p):]
	p = p[copy(b.filter[:], p):]
	p = p[copy(b.schema[:], p):]
	p = p[copy(b.epoch[:], p):]
	return b, p, nil
}

func (c codec) encodeCursor(cur cursor) string {
	return c.seal(kindCursor, cur.bind, binary.AppendUvarint(nil, uint64(cur.seq)))
}

func (c codec) decodeCursor(s string) (cursor, error) {
	b, p, err := c.open(kindCursor, s)
	if err != nil {
		return cursor{}, err
	}
	r := reader{p: p}
	cur := cursor{bind: b, seq: r.int()}
	return cur, r.done()
}

func (c codec) encodeKeyset(t keysetToken) string {
	p := binary.AppendUvarint(nil, uint64(t.watermark))
	p = binary.AppendUvarint(p, uint64(t.pageSize))
	p = binary.AppendUvarint(p, uint64(t.offset))
	p = binary.AppendUvarint(p, uint64(t.typeIndex))
	p = binary.AppendUvarint(p, uint64(len(t.lastID)))
	p = append(p, t.lastID...)
	return c.seal(kindKeyset, t.bind, p)
}

func (c codec) decodeKeyset(s string) (keysetToken, error) {
	b, p, err := c.open(kindKeyset, s)
	if err != nil {
		return keysetToken{}, err
	}
	r := reader{p: p}
	t := keysetToken{bind: b, watermark: r.int(), pageSize: int(r.int()), offset: r.int(), typeIndex: int(r.int())}
	t.lastID = r.str()
	return t, r.done()
}

func (c codec) encodeFrozen(t frozenToken) string {
	p := append([]byte{}, t.session[:]...)
	p = binary.AppendUvarint(p, uint64(t.page))
	p = binary.AppendUvarint(p, uint64(t.expires.UnixMicro()))
	return c.seal(kindFrozen, t.bind, p)
}

func (c codec) decodeFrozen(s string) (frozenToken, error) {
	b, p, err := c.open(kindFrozen, s)
	if err != nil {
		return frozenToken{}, err
	}
	t := frozenToken{bind: b}
	if len(p) < sessionIDLen {
		return frozenToken{}, errBadToken
	}
	p = p[copy(t.session[:], p):]
	r := reader{p: p}
	t.page = int(r.int())
	t.expires = time.UnixMicro(r.int()).UTC()
	return t, r.done()
}

// reader reads a payload's fields; the first failure sticks.
type reader struct {
	p   []byte
	bad bool
}

// int reads a uvarint that fits an int64 (and an int on 64-bit hosts).
func (r *reader) int() int64 {
	v, n := binary.Uvarint(r.p)
	if n <= 0 || v > 1<<62 {
		r.bad = true
		return 0
	}
	r.p = r.p[n:]
	return int64(v)
}

func (r *reader) str() string {
	n := r.int()
	if r.bad || n > int64(len(r.p)) {
		r.bad = true
		return ""
	}
	s := string(r.p[:n])
	r.p = r.p[n:]
	return s
}

// done reports a payload that did not decode whole.
func (r *reader) done() error {
	if r.bad || len(r.p) > 0 {
		return errBadToken
	}
	return nil
}
