package functions

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks (https://www.standardwebhooks.com/) header names and
// the secret prefix.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
	SecretPrefix    = "whsec_"
)

// Secret key sizes. The Standard Webhooks specification recommends keys of
// 24 to 64 bytes; GenerateSecret makes 32, ParseSecret accepts 1 to
// MaxSecretKey.
const (
	SecretKeySize = 32
	MaxSecretKey  = 512
)

// DefaultTolerance is how far a webhook-timestamp may be from the
// verifier's clock, either way, when Verify is given no tolerance.
var DefaultTolerance = 5 * time.Minute

// ParseSecret decodes a secret "whsec_" + base64(key) (standard alphabet,
// padding optional) into its key. Errors wrap ErrInvalidSecret.
func ParseSecret(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: want the prefix %q", ErrInvalidSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(enc)
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: key is not base64", ErrInvalidSecret)
	case len(key) == 0 || len(key) > MaxSecretKey:
		return nil, fmt.Errorf("%w: key must have 1 to %d bytes", ErrInvalidSecret, MaxSecretKey)
	}
	return key, nil
}

// GenerateSecret returns a new secret with a random key of SecretKeySize
// bytes.
func GenerateSecret() string {
	key := make([]byte, SecretKeySize)
	_, _ = rand.Read(key) // never fails (crypto/rand, Go 1.24+)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// Sign returns the webhook-signature value of a message: "v1," +
// base64(HMAC-SHA256(key, id + "." + unix seconds + "." + body)).
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := ParseSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, ts.Unix(), body)), nil
}

func mac(key []byte, id string, unix int64, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, unix, 10))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// SetHeaders sets the Standard Webhooks headers of a request with body
// on h: webhook-id, webhook-timestamp and, unless secret is empty,
// webhook-signature.
func SetHeaders(h http.Header, secret, id string, ts time.Time, body []byte) error {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	if secret == "" {
		return nil
	}
	sig, err := Sign(secret, id, ts, body)
	if err != nil {
		return err
	}
	h.Set(HeaderSignature, sig)
	return nil
}

// Verify checks a signed request against the current time; see VerifyAt.
func Verify(secret string, h http.Header, body []byte, tolerance time.Duration) error {
	return VerifyAt(secret, h, body, tolerance, time.Now())
}

// VerifyAt checks the Standard Webhooks headers of a request with body as
// of now: the timestamp must be within tolerance of now either way
// (DefaultTolerance if tolerance <= 0), and one of the space-separated
// "v1," signatures must match (compared in constant time; other versions
// are ignored). Errors wrap ErrInvalidSecret, ErrMissingHeader,
// ErrTimestamp or ErrSignature.
func VerifyAt(secret string, h http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	key, err := ParseSecret(secret)
	if err != nil {
		return err
	}
	id, tsv, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	for name, v := range map[string]string{HeaderID: id, HeaderTimestamp: tsv, HeaderSignature: sigs} {
		if v == "" {
			return fmt.Errorf("%w: %s", ErrMissingHeader, name)
		}
	}
	unix, err := checkTimestamp(tsv, tolerance, now)
	if err != nil {
		return err
	}
	want := mac(key, id, unix, body)
	for _, sig := range strings.Fields(sigs) {
		enc, ok := strings.CutPrefix(sig, "v1,")
		if !ok {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(enc)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignature
}

func checkTimestamp(v string, tolerance time.Duration, now time.Time) (int64, error) {
	unix, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q is not unix seconds", ErrTimestamp, v)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	sec := int64(tolerance / time.Second)
	if unix < now.Unix()-sec || unix > now.Unix()+sec {
		return 0, fmt.Errorf("%w: %s is more than %s from now", ErrTimestamp, v, tolerance)
	}
	return unix, nil
}
