package journal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"time"
)

// Cursors, fetch tokens and fetch positions are a version byte, a kind
// byte, a payload and a 16-byte HMAC-SHA256 tag, in unpadded base64url.
// The tag key is derived from the server secret, the space, the user and
// the application, so a token presented by another user or application,
// or in another space, fails the tag exactly as a damaged one does.
// Encoding is deterministic: the same position is always the same string.

// Token kinds.
const (
	kindCursor = 'c'
	kindFetch  = 'f'
	kindAfter  = 'a'
)

const (
	tokenVersion = 1
	tagLen       = 16
	sessionLen   = 12
	epochLen     = 8
	accessLen    = 8
	// maxTokenLen bounds what open accepts, before any work.
	maxTokenLen = 1024
)

// errBadToken is any token this server did not issue for this space,
// user and application: malformed, truncated, tampered or foreign.
var errBadToken = errors.New("not a journal token of this user, application and space")

// stamp is what a session fixes and every cursor and fetch token of it
// carries: the session, the space's epoch, what the reader's verdicts
// depended on (its access fingerprint) and the expiry.
type stamp struct {
	session [sessionLen]byte
	epoch   [epochLen]byte
	access  [accessLen]byte
	expires time.Time
}

// cursor is a journal position: every commit <= seq was walked, and the
// first skip entries of commit seq+1.
type cursor struct {
	stamp
	seq  int64
	skip int
}

// fetchToken names a session's initial fetch: the position it is
// consistent as of.
type fetchToken struct {
	stamp
	position int64
}

// fetchAfter is where an initial fetch stands: the last entity it
// consumed (an empty typ starts at the beginning).
type fetchAfter struct {
	session [sessionLen]byte
	typ, id string
}

// codec seals and opens the tokens of one space, user and application.
type codec struct{ key []byte }

// newCodec derives the key of one space, user and application.
func newCodec(secret []byte, space, user, application string) codec {
	m := hmac.New(sha256.New, secret)
	m.Write(digest("eddy journal v1", space, user, application))
	return codec{key: m.Sum(nil)}
}

// digest hashes length-prefixed parts, so no two lists of parts collide
// by concatenation.
func digest(parts ...string) []byte {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, p := range parts {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		h.Write([]byte(p))
	}
	return h.Sum(nil)
}

// epochOf is the part of a space's epoch a token carries.
func epochOf(epoch string) (out [epochLen]byte) {
	copy(out[:], digest(epoch))
	return out
}

// accessOf is the part of a reader's access fingerprint a token carries.
func accessOf(fingerprint string) (out [accessLen]byte) {
	copy(out[:], digest(fingerprint))
	return out
}

func (c codec) seal(kind byte, payload []byte) string {
	buf := make([]byte, 0, 2+len(payload)+tagLen)
	buf = append(buf, tokenVersion, kind)
	buf = append(buf, payload...)
	m := hmac.New(sha256.New, c.key)
	m.Write(buf)
	buf = m.Sum(buf)[:len(buf)+tagLen]
	return base64.RawURLEncoding.EncodeToString(buf)
}

// open checks s's tag and kind and returns its payload.
func (c codec) open(kind byte, s string) ([]byte, error) {
	if len(s) > maxTokenLen {
		return nil, errBadToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 2+tagLen {
		return nil, errBadToken
	}
	body, tag := raw[:len(raw)-tagLen], raw[len(raw)-tagLen:]
	m := hmac.New(sha256.New, c.key)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil)[:tagLen], tag) || body[0] != tokenVersion || body[1] != kind {
		return nil, errBadToken
	}
	return body[2:], nil
}

func appendStamp(b []byte, s stamp) []byte {
	b = append(b, s.session[:]...)
	b = append(b, s.epoch[:]...)
	b = append(b, s.access[:]...)
	return binary.AppendVarint(b, s.expires.UnixMicro())
}

// reader consumes a payload; any shortfall marks it bad.
type reader struct {
	p   []byte
	bad bool
}

func (r *reader) bytes(dst []byte) {
	if len(r.p) < len(dst) {
		r.bad = true
		return
	}
	r.p = r.p[copy(dst, r.p):]
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.p)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.p = r.p[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.p)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.p = r.p[n:]
	return v
}

func (r *reader) str() string {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.p)) {
		r.bad = true
		return ""
	}
	s := string(r.p[:n])
	r.p = r.p[n:]
	return s
}

func (r *reader) stamp() stamp {
	var s stamp
	r.bytes(s.session[:])
	r.bytes(s.epoch[:])
	r.bytes(s.access[:])
	s.expires = time.UnixMicro(r.varint()).UTC()
	return s
}

// done reports whether the payload was consumed exactly.
func (r *reader) done() bool { return !r.bad && len(r.p) == 0 }

func (c codec) encodeCursor(cur cursor) string {
	b := appendStamp(nil, cur.stamp)
	b = binary.AppendUvarint(b, uint64(cur.seq))
	b = binary.AppendUvarint(b, uint64(cur.skip))
	return c.seal(kindCursor, b)
}

func (c codec) decodeCursor(s string) (cursor, error) {
	p, err := c.open(kindCursor, s)
	if err != nil {
		return cursor{}, err
	}
	r := reader{p: p}
	cur := cursor{stamp: r.stamp()}
	seq, skip := r.uvarint(), r.uvarint()
	if !r.done() || seq > 1<<62 || skip > 1<<20 {
		return cursor{}, errBadToken
	}
	cur.seq, cur.skip = int64(seq), int(skip)
	return cur, nil
}

func (c codec) encodeFetch(t fetchToken) string {
	b := appendStamp(nil, t.stamp)
	return c.seal(kindFetch, binary.AppendUvarint(b, uint64(t.position)))
}

func (c codec) decodeFetch(s string) (fetchToken, error) {
	p, err := c.open(kindFetch, s)
	if err != nil {
		return fetchToken{}, err
	}
	r := reader{p: p}
	t := fetchToken{stamp: r.stamp()}
	pos := r.uvarint()
	if !r.done() || pos > 1<<62 {
		return fetchToken{}, errBadToken
	}
	t.position = int64(pos)
	return t, nil
}

func (c codec) encodeAfter(a fetchAfter) string {
	b := append([]byte(nil), a.session[:]...)
	b = binary.AppendUvarint(b, uint64(len(a.typ)))
	b = append(b, a.typ...)
	b = binary.AppendUvarint(b, uint64(len(a.id)))
	b = append(b, a.id...)
	return c.seal(kindAfter, b)
}

func (c codec) decodeAfter(s string) (fetchAfter, error) {
	p, err := c.open(kindAfter, s)
	if err != nil {
		return fetchAfter{}, err
	}
	r := reader{p: p}
	var a fetchAfter
	r.bytes(a.session[:])
	a.typ, a.id = r.str(), r.str()
	if !r.done() {
		return fetchAfter{}, errBadToken
	}
	return a, nil
}
