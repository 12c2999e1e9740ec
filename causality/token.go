package causality

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/eddy-run/eddy/store"
)

// Errors of Verify, wrapped with detail; branch with errors.Is.
var (
	// ErrMalformed reports a token that is not one: wrong shape, bad
	// base64 or JSON, or claims that break the rules.
	ErrMalformed = errors.New("malformed cause token")
	// ErrBadSignature reports a token not signed with this server's key.
	ErrBadSignature = errors.New("cause token signature does not verify")
	// ErrExpired reports a token past its exp.
	ErrExpired = errors.New("cause token expired")
	// ErrWrongSpace reports a token minted for another space.
	ErrWrongSpace = errors.New("cause token belongs to another space")
)

// KeySecret is the name of the server secret that signs cause tokens.
const KeySecret = "cause-token"

// keyLen is the length of a generated key.
const keyLen = 32

// DefaultTokenTTL is how long a cause token minted for a delivery stays
// valid: long enough for a webhook that answers first and writes back
// later.
const DefaultTokenTTL = time.Hour

// MaxTokenLen bounds a token Verify reads.
const MaxTokenLen = 2048

// maxName bounds the trigger and delivery names in claims.
const maxName = 256

// Claims are what a cause token says: the delivery a write comes from.
// CausedBy is the seq of the row that caused the delivery and Depth the
// delivery's depth; Exp is a Unix time in seconds.
type Claims struct {
	Space    string `json:"space"`
	Trigger  string `json:"trigger"`
	Delivery string `json:"delivery"`
	CausedBy int64  `json:"causedBy"`
	// Root is the seq of the chain's root write; tokens minted before
	// roots were recorded have none, and their writes take CausedBy as
	// the root (see RootOf).
	Root  int64 `json:"root,omitempty"`
	Depth int   `json:"depth"`
	// Via is ViaCron for a delivery a cron fire row caused; empty means
	// ViaTrigger.
	Via string `json:"via,omitempty"`
	Exp int64  `json:"exp"`
}

// Claims returns the claims of a token for d in space, valid until exp.
func (d Effect) Claims(space string, exp time.Time) Claims {
	c := Claims{Space: space, Trigger: d.Trigger, Delivery: d.ID, CausedBy: d.Cause.Seq, Root: d.Cause.RootSeq(), Depth: d.Depth(), Exp: exp.Unix()}
	if d.Via() == ViaCron {
		c.Via = ViaCron
	}
	return c
}

// Provenance returns the provenance template of a write made with the
// token: the delivery's, as if it had run in process.
func (c Claims) Provenance(requestID, traceparent string) store.Provenance {
	via := c.Via
	if via == "" {
		via = ViaTrigger
	}
	root := c.Root
	if root == 0 {
		root = c.CausedBy
	}
	return store.Provenance{
		Actor: Actor(c.Trigger), Via: via, RequestID: requestID,
		Trigger: c.Trigger, Delivery: c.Delivery, CausedBy: c.CausedBy, Root: root, Depth: c.Depth,
		Traceparent: traceparent,
	}
}

// check validates the claims' fields (not exp against a clock).
func (c Claims) check() error {
	switch {
	case c.Space == "":
		return errors.New("space is empty")
	case c.Trigger == "" || len(c.Trigger) > maxName:
		return fmt.Errorf("trigger must be 1..%d bytes", maxName)
	case c.Delivery == "" || len(c.Delivery) > maxName:
		return fmt.Errorf("delivery must be 1..%d bytes", maxName)
	case c.CausedBy < 1:
		return fmt.Errorf("causedBy must be a seq (>= 1), got %d", c.CausedBy)
	case c.Root < 0 || c.Root > c.CausedBy:
		return fmt.Errorf("root must be a seq no greater than causedBy %d, got %d", c.CausedBy, c.Root)
	case c.Depth < 1:
		return fmt.Errorf("depth of a delivery must be >= 1, got %d", c.Depth)
	case c.Via != "" && c.Via != ViaTrigger && c.Via != ViaCron:
		return fmt.Errorf("via must be %s or %s, got %q", ViaTrigger, ViaCron, c.Via)
	case c.Exp <= 0:
		return errors.New("exp is missing")
	}
	return nil
}

// Secrets is the part of store.Store that keeps server secrets.
type Secrets interface {
	Secret(ctx context.Context, name string, gen func() ([]byte, error)) ([]byte, error)
}

// Key returns the key that signs cause tokens, generating and storing 32
// random bytes under KeySecret the first time. Every process sharing the
// database gets the same key.
func Key(ctx context.Context, st Secrets) ([]byte, error) {
	key, err := st.Secret(ctx, KeySecret, func() ([]byte, error) {
		b := make([]byte, keyLen)
		_, err := rand.Read(b)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("cause token key: %w", err)
	}
	if len(key) == 0 {
		return nil, errors.New("cause token key: stored key is empty")
	}
	return key, nil
}

var b64 = base64.RawURLEncoding

// Mint returns a token carrying c, signed with key:
// base64url(JSON claims) "." base64url(HMAC-SHA256(key, first part)).
func Mint(key []byte, c Claims) (string, error) {
	if len(key) == 0 {
		return "", errors.New("mint cause token: empty key")
	}
	if err := c.check(); err != nil {
		return "", fmt.Errorf("mint cause token: %w", err)
	}
	body, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("mint cause token: %w", err)
	}
	payload := b64.EncodeToString(body)
	return payload + "." + b64.EncodeToString(sign(key, payload)), nil
}

func sign(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Verify checks a token against key and returns its claims if it is well
// formed, signed with key, not expired at now (exp is exclusive) and
// minted for space. Its errors wrap ErrMalformed, ErrBadSignature,
// ErrExpired or ErrWrongSpace, checked in that order.
func Verify(key []byte, token, space string, now time.Time) (Claims, error) {
	payload, sig, err := split(token)
	if err != nil {
		return Claims{}, err
	}
	if len(key) == 0 || !hmac.Equal(sig, sign(key, payload)) {
		return Claims{}, ErrBadSignature
	}
	c, err := decodeClaims(payload)
	if err != nil {
		return Claims{}, err
	}
	if now.Unix() >= c.Exp {
		return Claims{}, fmt.Errorf("%w at %s", ErrExpired, time.Unix(c.Exp, 0).UTC().Format(time.RFC3339))
	}
	if c.Space != space {
		return Claims{}, fmt.Errorf("%w (%q, not %q)", ErrWrongSpace, c.Space, space)
	}
	return c, nil
}

// split returns a token's payload part and its decoded signature.
func split(token string) (string, []byte, error) {
	if len(token) > MaxTokenLen {
		return "", nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxTokenLen)
	}
	payload, sigPart, ok := strings.Cut(token, ".")
	if !ok || payload == "" || strings.Contains(sigPart, ".") {
		return "", nil, fmt.Errorf("%w: want <claims>.<signature>", ErrMalformed)
	}
	sig, err := b64.DecodeString(sigPart)
	if err != nil || len(sig) != sha256.Size {
		return "", nil, fmt.Errorf("%w: signature is not base64url of %d bytes", ErrMalformed, sha256.Size)
	}
	return payload, sig, nil
}

// decodeClaims decodes and checks a signed payload.
func decodeClaims(payload string) (Claims, error) {
	body, err := b64.DecodeString(payload)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: claims are not base64url", ErrMalformed)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var c Claims
	if err := dec.Decode(&c); err != nil || dec.More() {
		return Claims{}, fmt.Errorf("%w: claims are not a JSON object", ErrMalformed)
	}
	if err := c.check(); err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return c, nil
}

// Keyring caches the cause-token key of one store: the key never changes
// once stored, so only the first call reads (and perhaps creates) it.
type Keyring struct {
	st  Secrets
	mu  sync.Mutex
	key []byte // guarded by mu; nil until loaded
}

// NewKeyring returns a Keyring over st.
func NewKeyring(st Secrets) *Keyring { return &Keyring{st: st} }

// Key returns the cause-token key, loading it on first use; a failed load
// is retried on the next call.
func (k *Keyring) Key(ctx context.Context) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key == nil {
		key, err := Key(ctx, k.st)
		if err != nil {
			return nil, err
		}
		k.key = key
	}
	return k.key, nil
}
