package journal

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/eddy-run/eddy/internal/seal"
)

// Cursors, fetch tokens and fetch positions are sealed tokens (package
// seal): a version byte, a kind byte, a payload and a 16-byte HMAC-SHA256
// tag, in unpadded base64url.
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
	sessionLen = 12
	epochLen   = 8
	accessLen  = 8
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
type codec struct{ c seal.Codec }

// newCodec derives the key of one space, user and application.
func newCodec(secret []byte, space, user, application string) codec {
	return codec{seal.New(secret, "eddy journal v1", space, user, application)}
}

// epochOf is the part of a space's epoch a token carries.
func epochOf(epoch string) (out [epochLen]byte) {
	copy(out[:], seal.Digest(epoch))
	return out
}

// accessOf is the part of a reader's access fingerprint a token carries.
func accessOf(fingerprint string) (out [accessLen]byte) {
	copy(out[:], seal.Digest(fingerprint))
	return out
}

func appendStamp(b []byte, s stamp) []byte {
	b = append(b, s.session[:]...)
	b = append(b, s.epoch[:]...)
	b = append(b, s.access[:]...)
	return binary.AppendVarint(b, s.expires.UnixMicro())
}

// readStamp reads what appendStamp wrote.
func readStamp(r *seal.Reader) stamp {
	var s stamp
	r.Bytes(s.session[:])
	r.Bytes(s.epoch[:])
	r.Bytes(s.access[:])
	s.expires = time.UnixMicro(r.Varint()).UTC()
	return s
}

func (c codec) encodeCursor(cur cursor) string {
	b := appendStamp(nil, cur.stamp)
	b = binary.AppendUvarint(b, uint64(cur.seq))
	b = binary.AppendUvarint(b, uint64(cur.skip))
	return c.c.Seal(kindCursor, b)
}

func (c codec) decodeCursor(s string) (cursor, error) {
	p, err := c.c.Open(kindCursor, s)
	if err != nil {
		return cursor{}, errBadToken
	}
	r := seal.NewReader(p)
	cur := cursor{stamp: readStamp(r)}
	seq, skip := r.Uvarint(), r.Uvarint()
	if !r.Done() || seq > 1<<62 || skip > 1<<20 {
		return cursor{}, errBadToken
	}
	cur.seq, cur.skip = int64(seq), int(skip)
	return cur, nil
}

func (c codec) encodeFetch(t fetchToken) string {
	b := appendStamp(nil, t.stamp)
	return c.c.Seal(kindFetch, binary.AppendUvarint(b, uint64(t.position)))
}

func (c codec) decodeFetch(s string) (fetchToken, error) {
	p, err := c.c.Open(kindFetch, s)
	if err != nil {
		return fetchToken{}, errBadToken
	}
	r := seal.NewReader(p)
	t := fetchToken{stamp: readStamp(r)}
	pos := r.Uvarint()
	if !r.Done() || pos > 1<<62 {
		return fetchToken{}, errBadToken
	}
	t.position = int64(pos)
	return t, nil
}

func (c codec) encodeAfter(a fetchAfter) string {
	b := append([]byte(nil), a.session[:]...)
	b = seal.AppendStr(b, a.typ)
	b = seal.AppendStr(b, a.id)
	return c.c.Seal(kindAfter, b)
}

func (c codec) decodeAfter(s string) (fetchAfter, error) {
	p, err := c.c.Open(kindAfter, s)
	if err != nil {
		return fetchAfter{}, errBadToken
	}
	r := seal.NewReader(p)
	var a fetchAfter
	r.Bytes(a.session[:])
	a.typ, a.id = r.Str(), r.Str()
	if !r.Done() {
		return fetchAfter{}, errBadToken
	}
	return a, nil
}
