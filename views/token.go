package views

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/eddy-run/eddy/internal/seal"
)

// Tokens and cursors are opaque to clients (package seal): a version
// byte, a kind byte, the context binding, the kind's payload, and an
// HMAC-SHA256 tag (16 bytes) under a key derived from the server secret,
// the space and the view, all in unpadded base64url. A token of another space or view, or
// one changed by a single bit, fails the tag. Encoding is deterministic,
// so the same position always gives the same string: a retried page
// repeats its tokens and cursor byte for byte.

// Token kinds.
const (
	kindCursor = 'c'
	kindKeyset = 'k'
	kindFrozen = 'f'
)

const sessionIDLen = 16

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

// newCodec returns the codec of one view of one space.
func newCodec(secret []byte, space, view string) codec {
	return codec{seal.New(secret, "eddy views v1", space, view)}
}

// codec encodes and decodes the tokens of one view of one space: a
// seal.Codec whose payloads start with the binding.
type codec struct{ c seal.Codec }

func (c codec) seal(kind byte, b binding, payload []byte) string {
	buf := make([]byte, 0, bindingLen+len(payload))
	buf = append(buf, b.fingerprint[:]...)
	buf = append(buf, b.filter[:]...)
	buf = append(buf, b.schema[:]...)
	buf = append(buf, b.epoch[:]...)
	return c.c.Seal(kind, append(buf, payload...))
}

// open checks s's tag and kind and returns its binding and payload.
func (c codec) open(kind byte, s string) (binding, []byte, error) {
	var b binding
	p, err := c.c.Open(kind, s)
	if err != nil || len(p) < bindingLen {
		return b, nil, errBadToken
	}
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
	r := seal.NewReader(p)
	cur := cursor{bind: b, seq: r.Int()}
	return cur, done(r)
}

func (c codec) encodeKeyset(t keysetToken) string {
	p := binary.AppendUvarint(nil, uint64(t.watermark))
	p = binary.AppendUvarint(p, uint64(t.pageSize))
	p = binary.AppendUvarint(p, uint64(t.offset))
	p = binary.AppendUvarint(p, uint64(t.typeIndex))
	p = seal.AppendStr(p, t.lastID)
	return c.seal(kindKeyset, t.bind, p)
}

func (c codec) decodeKeyset(s string) (keysetToken, error) {
	b, p, err := c.open(kindKeyset, s)
	if err != nil {
		return keysetToken{}, err
	}
	r := seal.NewReader(p)
	t := keysetToken{bind: b, watermark: r.Int(), pageSize: int(r.Int()), offset: r.Int(), typeIndex: int(r.Int())}
	t.lastID = r.Str()
	return t, done(r)
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
	r := seal.NewReader(p)
	t.page = int(r.Int())
	t.expires = time.UnixMicro(r.Int()).UTC()
	return t, done(r)
}

// done reports a payload that did not decode whole.
func done(r *seal.Reader) error {
	if !r.Done() {
		return errBadToken
	}
	return nil
}
