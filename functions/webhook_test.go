package functions

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The test vector of the Standard Webhooks reference libraries.
const (
	vectorID   = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorBody = `{"test": 2432232314}`
	vectorSig  = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var vectorTS = time.Unix(1614265330, 0)

func TestSignVector(t *testing.T) {
	t.Parallel()
	sig, err := Sign(testSecret, vectorID, vectorTS, []byte(vectorBody))
	if err != nil {
		t.Fatal(err)
	}
	if sig != vectorSig {
		t.Fatalf("Sign = %s, want %s", sig, vectorSig)
	}
}

func TestSetHeaders(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	if err := SetHeaders(h, testSecret, vectorID, vectorTS, []byte(vectorBody)); err != nil {
		t.Fatal(err)
	}
	if h.Get("webhook-id") != vectorID || h.Get("webhook-timestamp") != "1614265330" || h.Get("webhook-signature") != vectorSig {
		t.Fatalf("headers = %v", h)
	}
	unsigned := http.Header{}
	if err := SetHeaders(unsigned, "", "d1", vectorTS, nil); err != nil {
		t.Fatal(err)
	}
	if unsigned.Get(HeaderSignature) != "" || unsigned.Get(HeaderID) != "d1" {
		t.Fatalf("unsigned headers = %v", unsigned)
	}
	if err := SetHeaders(http.Header{}, "bad", "d1", vectorTS, nil); !errors.Is(err, ErrInvalidSecret) {
		t.Fatalf("bad secret: %v", err)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	body := []byte(vectorBody)
	signed := func(edit func(h http.Header)) http.Header {
		h := http.Header{}
		if err := SetHeaders(h, testSecret, vectorID, vectorTS, body); err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(h)
		}
		return h
	}
	other := "whsec_" + strings.Repeat("A", 32)
	tests := []struct {
		name   string
		secret string
		h      http.Header
		body   string
		now    time.Time
		tol    time.Duration
		want   error
	}{
		{"valid", testSecret, signed(nil), vectorBody, vectorTS, 0, nil},
		{"valid at the edge of tolerance", testSecret, signed(nil), vectorBody, vectorTS.Add(5 * time.Minute), 0, nil},
		{"multiple signatures", testSecret, signed(func(h http.Header) {
			h.Set(HeaderSignature, "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= v1a,abc v2,xyz "+h.Get(HeaderSignature)+" v1,!!")
		}), vectorBody, vectorTS, 0, nil},
		{"tampered body", testSecret, signed(nil), `{"test": 2432232315}`, vectorTS, 0, ErrSignature},
		{"tampered id", testSecret, signed(func(h http.Header) { h.Set(HeaderID, "msg_other") }), vectorBody, vectorTS, 0, ErrSignature},
		{"tampered timestamp", testSecret, signed(func(h http.Header) { h.Set(HeaderTimestamp, "1614265331") }), vectorBody, vectorTS, 0, ErrSignature},
		{"tampered signature", testSecret, signed(func(h http.Header) {
			h.Set(HeaderSignature, strings.Replace(vectorSig, "g0h", "g1h", 1))
		}), vectorBody, vectorTS, 0, ErrSignature},
		{"wrong version only", testSecret, signed(func(h http.Header) {
			h.Set(HeaderSignature, strings.Replace(vectorSig, "v1,", "v2,", 1))
		}), vectorBody, vectorTS, 0, ErrSignature},
		{"wrong secret", other, signed(nil), vectorBody, vectorTS, 0, ErrSignature},
		{"too old", testSecret, signed(nil), vectorBody, vectorTS.Add(5*time.Minute + time.Second), 0, ErrTimestamp},
		{"too new", testSecret, signed(nil), vectorBody, vectorTS.Add(-5*time.Minute - time.Second), 0, ErrTimestamp},
		{"tight tolerance", testSecret, signed(nil), vectorBody, vectorTS.Add(2 * time.Second), time.Second, ErrTimestamp},
		{"wide tolerance", testSecret, signed(nil), vectorBody, vectorTS.Add(time.Hour), 2 * time.Hour, nil},
		{"malformed timestamp", testSecret, signed(func(h http.Header) { h.Set(HeaderTimestamp, "soon") }), vectorBody, vectorTS, 0, ErrTimestamp},
		{"extreme timestamp", testSecret, signed(func(h http.Header) { h.Set(HeaderTimestamp, "-9223372036854775808") }), vectorBody, vectorTS, 0, ErrTimestamp},
		{"missing id", testSecret, signed(func(h http.Header) { h.Del(HeaderID) }), vectorBody, vectorTS, 0, ErrMissingHeader},
		{"missing timestamp", testSecret, signed(func(h http.Header) { h.Del(HeaderTimestamp) }), vectorBody, vectorTS, 0, ErrMissingHeader},
		{"missing signature", testSecret, signed(func(h http.Header) { h.Del(HeaderSignature) }), vectorBody, vectorTS, 0, ErrMissingHeader},
		{"bad secret", "secret", signed(nil), vectorBody, vectorTS, 0, ErrInvalidSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := VerifyAt(tt.secret, tt.h, []byte(tt.body), tt.tol, tt.now)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("VerifyAt = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestVerifyNow(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	if err := SetHeaders(h, testSecret, "d1", time.Now(), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if err := Verify(testSecret, h, []byte("{}"), time.Minute); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestParseSecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		secret  string
		keyLen  int
		wantErr bool
	}{
		{testSecret, 24, false},
		{"whsec_c2VjcmV0", 6, false},
		{"whsec_c2VjcmV0MQ==", 7, false},
		{"whsec_c2VjcmV0MQ", 7, false}, // padding optional
		{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 0, true},
		{"whsec_", 0, true},
		{"whsec_not base64", 0, true},
		{"whsec_" + strings.Repeat("A", (MaxSecretKey+3)/3*4+4), 0, true},
	}
	for _, tt := range tests {
		key, err := ParseSecret(tt.secret)
		if (err != nil) != tt.wantErr || len(key) != tt.keyLen {
			t.Errorf("ParseSecret(%q) = %d bytes, %v", tt.secret, len(key), err)
		}
		if err != nil && !errors.Is(err, ErrInvalidSecret) {
			t.Errorf("ParseSecret(%q) error %v is not ErrInvalidSecret", tt.secret, err)
		}
	}
}

func TestGenerateSecret(t *testing.T) {
	t.Parallel()
	a, b := GenerateSecret(), GenerateSecret()
	if a == b {
		t.Fatal("two generated secrets are equal")
	}
	key, err := ParseSecret(a)
	if err != nil || len(key) != SecretKeySize {
		t.Fatalf("ParseSecret(GenerateSecret()) = %d bytes, %v", len(key), err)
	}
	sig, err := Sign(a, "id", vectorTS, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(HeaderID, "id")
	h.Set(HeaderTimestamp, strconv.FormatInt(vectorTS.Unix(), 10))
	h.Set(HeaderSignature, sig)
	if err := VerifyAt(a, h, nil, 0, vectorTS); err != nil {
		t.Fatalf("own signature does not verify: %v", err)
	}
}

// Post never follows a redirect, even with a client that would: the 3xx
// is the answer, and the target is never called.
func TestPostRefusesRedirects(t *testing.T) {
	t.Parallel()
	var followed atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { followed.Store(true) }))
	t.Cleanup(target.Close)
	hop := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	t.Cleanup(hop.Close)
	f, err := ParseFunction("hook", []byte(`{"kind": "webhook", "url": "`+hop.URL+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	ans, err := f.Post(t.Context(), &http.Client{}, "dlv_1", "", []byte(`{}`), nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Status != http.StatusTemporaryRedirect || followed.Load() {
		t.Fatalf("status %d, followed %v: want the 307 itself", ans.Status, followed.Load())
	}
}
