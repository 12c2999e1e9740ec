package causality

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	testKey = []byte("0123456789abcdef0123456789abcdef")
	testNow = time.Date(2026, 8, 4, 10, 0, 0, 0, time.UTC)
)

func testClaims() Claims {
	return Claims{Space: "default", Trigger: "stamp", Delivery: "d-1", CausedBy: 7, Depth: 2, Exp: testNow.Add(time.Hour).Unix()}
}

func mint(t *testing.T, key []byte, c Claims) string {
	t.Helper()
	tok, err := Mint(key, c)
	if err != nil {
		t.Fatalf("mint: %v", err)
	}
	return tok
}

func TestMintVerify(t *testing.T) {
	t.Parallel()
	tok := mint(t, testKey, testClaims())
	got, err := Verify(testKey, tok, "default", testNow)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if got != testClaims() {
		t.Fatalf("claims = %+v, want %+v", got, testClaims())
	}
	if strings.Count(tok, ".") != 1 || strings.ContainsAny(tok, "+/=") {
		t.Fatalf("token %q is not base64url.base64url", tok)
	}
}

func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	good := mint(t, testKey, testClaims())
	payload, sig, _ := strings.Cut(good, ".")
	other := testClaims()
	other.Depth = 1
	otherPayload, _, _ := strings.Cut(mint(t, testKey, other), ".")
	forged := base64.RawURLEncoding.EncodeToString([]byte(`{"space":"default","trigger":"x","delivery":"d","causedBy":1,"depth":1,"exp":99999999999}`))
	badClaims := Claims{Space: "default", Trigger: "t", Delivery: "d", CausedBy: 0, Depth: 1, Exp: testNow.Add(time.Hour).Unix()}
	flipped := []byte(sig)
	flipped[3] ^= 1
	if flipped[3] == '.' {
		flipped[3] = 'A'
	}

	tests := []struct {
		name  string
		key   []byte
		token string
		space string
		now   time.Time
		want  error
	}{
		{"empty", testKey, "", "default", testNow, ErrMalformed},
		{"no dot", testKey, payload, "default", testNow, ErrMalformed},
		{"two dots", testKey, good + ".x", "default", testNow, ErrMalformed},
		{"short signature", testKey, payload + ".AAAA", "default", testNow, ErrMalformed},
		{"signature not base64", testKey, payload + ".***", "default", testNow, ErrMalformed},
		{"too long", testKey, strings.Repeat("a", MaxTokenLen) + "." + sig, "default", testNow, ErrMalformed},
		{"tampered claims", testKey, otherPayload + "." + sig, "default", testNow, ErrBadSignature},
		{"forged claims", testKey, forged + "." + sig, "default", testNow, ErrBadSignature},
		{"tampered signature", testKey, payload + "." + string(flipped), "default", testNow, ErrBadSignature},
		{"wrong key", []byte("another key, just as long as it...."), good, "default", testNow, ErrBadSignature},
		{"no key", nil, good, "default", testNow, ErrBadSignature},
		{"expired", testKey, good, "default", testNow.Add(time.Hour), ErrExpired},
		{"long expired", testKey, good, "default", testNow.Add(48 * time.Hour), ErrExpired},
		{"wrong space", testKey, good, "other", testNow, ErrWrongSpace},
		{"signed bad claims", testKey, signed(t, `{"space":"default"}`), "default", testNow, ErrMalformed},
		{"signed unknown field", testKey, signed(t, `{"space":"default","trigger":"t","delivery":"d","causedBy":1,"depth":1,"exp":99999999999,"actor":"owner"}`), "default", testNow, ErrMalformed},
		{"signed not json", testKey, signed(t, `not json`), "default", testNow, ErrMalformed},
		{"signed depth 0", testKey, signedClaims(t, Claims{Space: "default", Trigger: "t", Delivery: "d", CausedBy: 1, Exp: 99999999999}), "default", testNow, ErrMalformed},
		{"signed causedBy 0", testKey, signedClaims(t, badClaims), "default", testNow, ErrMalformed},
	}
	for _, tt := range tests {
		_, err := Verify(tt.key, tt.token, tt.space, tt.now)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// signed signs an arbitrary claims document with testKey.
func signed(t *testing.T, body string) string {
	t.Helper()
	p := base64.RawURLEncoding.EncodeToString([]byte(body))
	return p + "." + base64.RawURLEncoding.EncodeToString(sign(testKey, p))
}

// signedClaims signs claims that Mint would refuse.
func signedClaims(t *testing.T, c Claims) string {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return signed(t, string(b))
}

func TestVerifyExpiryBoundary(t *testing.T) {
	t.Parallel()
	c := testClaims()
	tok := mint(t, testKey, c)
	exp := time.Unix(c.Exp, 0)
	if _, err := Verify(testKey, tok, "default", exp.Add(-time.Second)); err != nil {
		t.Fatalf("a second before exp: %v", err)
	}
	if _, err := Verify(testKey, tok, "default", exp); !errors.Is(err, ErrExpired) {
		t.Fatalf("at exp: err = %v, want ErrExpired", err)
	}
}

func TestMintRefuses(t *testing.T) {
	t.Parallel()
	mutate := []struct {
		name string
		fn   func(*Claims)
	}{
		{"no space", func(c *Claims) { c.Space = "" }},
		{"no trigger", func(c *Claims) { c.Trigger = "" }},
		{"no delivery", func(c *Claims) { c.Delivery = "" }},
		{"long trigger", func(c *Claims) { c.Trigger = strings.Repeat("t", maxName+1) }},
		{"causedBy 0", func(c *Claims) { c.CausedBy = 0 }},
		{"depth 0", func(c *Claims) { c.Depth = 0 }},
		{"bad via", func(c *Claims) { c.Via = "api" }},
		{"no exp", func(c *Claims) { c.Exp = 0 }},
	}
	for _, m := range mutate {
		c := testClaims()
		m.fn(&c)
		if _, err := Mint(testKey, c); err == nil {
			t.Errorf("%s: Mint succeeded", m.name)
		}
	}
	if _, err := Mint(nil, testClaims()); err == nil {
		t.Error("Mint with no key succeeded")
	}
}

func TestDeliveryClaims(t *testing.T) {
	t.Parallel()
	exp := testNow.Add(DefaultTokenTTL)
	d := Effect{Trigger: "nightly", ID: "d-2", Cause: Cause{Seq: 5, Op: "fire"}}
	c := d.Claims("default", exp)
	want := Claims{Space: "default", Trigger: "nightly", Delivery: "d-2", CausedBy: 5, Root: 5, Depth: 1, Via: "cron", Exp: exp.Unix()}
	if c != want {
		t.Fatalf("claims = %+v, want %+v", c, want)
	}
	// A write made with the token is authored as the delivery would
	// author it in process.
	if got, want := c.Provenance("rq", ""), d.Provenance("rq", ""); got != want {
		t.Fatalf("token provenance = %+v, in-process = %+v", got, want)
	}
	d.Cause.Op = "patch"
	if c := d.Claims("default", exp); c.Via != "" || c.Provenance("", "").Via != ViaTrigger {
		t.Fatalf("change delivery claims = %+v", c)
	}
}

// secrets is a Secrets that keeps one value per name.
type secrets map[string][]byte

func (s secrets) Secret(_ context.Context, name string, gen func() ([]byte, error)) ([]byte, error) {
	if v, ok := s[name]; ok {
		return v, nil
	}
	v, err := gen()
	if err != nil {
		return nil, err
	}
	s[name] = v
	return v, nil
}

func TestKey(t *testing.T) {
	t.Parallel()
	st := secrets{}
	k1, err := Key(context.Background(), st)
	if err != nil || len(k1) != 32 {
		t.Fatalf("Key = %x, %v; want 32 bytes", k1, err)
	}
	k2, err := Key(context.Background(), st)
	if err != nil || string(k1) != string(k2) {
		t.Fatalf("second Key = %x, %v; want the stored %x", k2, err, k1)
	}
	if _, ok := st[KeySecret]; !ok {
		t.Fatalf("key not stored under %q", KeySecret)
	}
	if _, err := Key(context.Background(), secrets{KeySecret: {}}); err == nil {
		t.Fatal("Key accepted an empty stored key")
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(mintSeed(f), "default")
	f.Add("", "default")
	f.Add("a.b", "x")
	f.Add("eyJzcGFjZSI6ImRlZmF1bHQifQ.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "default")
	f.Fuzz(func(t *testing.T, token, space string) {
		c, err := Verify(testKey, token, space, testNow)
		if err != nil {
			for _, want := range []error{ErrMalformed, ErrBadSignature, ErrExpired, ErrWrongSpace} {
				if errors.Is(err, want) {
					return
				}
			}
			t.Fatalf("untyped error %v", err)
		}
		if c.Space != space || c.Depth < 1 || c.CausedBy < 1 {
			t.Fatalf("verified claims %+v for space %q", c, space)
		}
	})
}

func mintSeed(f *testing.F) string {
	f.Helper()
	tok, err := Mint(testKey, testClaims())
	if err != nil {
		f.Fatal(err)
	}
	return tok
}

// TestTokenWithoutRoot: a token minted before roots were recorded still
// verifies, and its writes take the cause as their root.
func TestTokenWithoutRoot(t *testing.T) {
	t.Parallel()
	key := []byte("a key of at least thirty-two bytes")
	old := Claims{Space: "default", Trigger: "stamp", Delivery: "d-1", CausedBy: 12, Depth: 2, Exp: testNow.Add(time.Hour).Unix()}
	tok, err := Mint(key, old)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Verify(key, tok, "default", testNow)
	if err != nil {
		t.Fatalf("verify a token without root: %v", err)
	}
	if p := c.Provenance("", ""); p.Root != 12 || p.CausedBy != 12 {
		t.Fatalf("provenance = %+v, want root 12", p)
	}
	bad := old
	bad.Root = 13
	tok, err = Mint(key, bad)
	if err == nil {
		_, err = Verify(key, tok, "default", testNow)
	}
	if err == nil {
		t.Fatal("a root above causedBy verified")
	}
}
