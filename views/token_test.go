package views

import (
	"encoding/base64"
	"testing"
	"time"
)

func testCodec(view string) codec { return newCodec([]byte("secret"), "s", view) }

func testBinding() binding {
	d := &Definition{name: "v", spec: Spec{Version: "v1"}, signature: "sig"}
	return NewContext("s", d, "sv", "ep").binding()
}

func TestTokenRoundTrip(t *testing.T) {
	t.Parallel()
	c := testCodec("v")
	b := testBinding()
	cur := cursor{bind: b, seq: 1 << 40}
	s := c.encodeCursor(cur)
	if got, err := c.decodeCursor(s); err != nil || got != cur {
		t.Fatalf("cursor = %+v, %v; want %+v", got, err, cur)
	}
	if c.encodeCursor(cur) != s {
		t.Fatal("encoding is not deterministic")
	}
	ks := keysetToken{bind: b, watermark: 9, pageSize: 100, offset: 300, typeIndex: 1, lastID: "id:é"}
	if got, err := c.decodeKeyset(c.encodeKeyset(ks)); err != nil || got != ks {
		t.Fatalf("keyset = %+v, %v; want %+v", got, err, ks)
	}
	fz := frozenToken{bind: b, session: [16]byte{1, 2, 3}, page: 7, expires: time.UnixMicro(1_800_000_000_123_456).UTC()}
	if got, err := c.decodeFrozen(c.encodeFrozen(fz)); err != nil || got != fz {
		t.Fatalf("frozen = %+v, %v; want %+v", got, err, fz)
	}
	// A token of one kind is no token of another.
	if _, err := c.decodeKeyset(s); err == nil {
		t.Fatal("a cursor decoded as a keyset token")
	}
	if _, err := c.decodeCursor(c.encodeFrozen(fz)); err == nil {
		t.Fatal("a frozen token decoded as a cursor")
	}
}

// TestTokenTamper flips every bit of a token in turn: each flip is
// refused, and so is the token under another view's or space's key.
func TestTokenTamper(t *testing.T) {
	t.Parallel()
	c := testCodec("v")
	s := c.encodeKeyset(keysetToken{bind: testBinding(), watermark: 9, pageSize: 100, lastID: "t1"})
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		for bit := range 8 {
			raw[i] ^= 1 << bit
			if _, err := c.decodeKeyset(base64.RawURLEncoding.EncodeToString(raw)); err == nil {
				t.Fatalf("byte %d bit %d flipped: accepted", i, bit)
			}
			raw[i] ^= 1 << bit
		}
	}
	if _, err := testCodec("w").decodeKeyset(s); err == nil {
		t.Fatal("another view's key accepted the token")
	}
	other := newCodec([]byte("secret"), "other", "v")
	if _, err := other.decodeKeyset(s); err == nil {
		t.Fatal("another space's key accepted the token")
	}
	for _, bad := range []string{"", "!!", s[:len(s)-1], s + "A", "AAAA"} {
		if _, err := c.decodeKeyset(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

func TestBindingStale(t *testing.T) {
	t.Parallel()
	d := mustView(t, "v", `{"version":"v1","types":["task"],"filter":{"cel":"true"}}`)
	d2 := mustView(t, "v", `{"version":"v1","types":["task"],"filter":{"cel":"false"}}`)
	d3 := mustView(t, "v", `{"version":"v2","types":["task"],"filter":{"cel":"true"}}`)
	b := NewContext("s", d, "sv1", "e1").binding()
	tests := []struct {
		now  Context
		want Reason
	}{
		{NewContext("s", d, "sv1", "e1"), ""},
		{NewContext("s", d2, "sv1", "e1"), ViewChanged},
		{NewContext("s", d3, "sv1", "e1"), ViewChanged},
		{NewContext("s", d, "sv2", "e1"), SchemaChanged},
		{NewContext("s", d2, "sv2", "e1"), ViewChanged},
		{NewContext("s", d, "sv1", "e2"), EpochChanged},
		{NewContext("s", d2, "sv2", "e2"), EpochChanged},
	}
	for i, tc := range tests {
		if got := b.stale(tc.now); got != tc.want {
			t.Errorf("%d: stale = %q, want %q", i, got, tc.want)
		}
	}
}

// FuzzDecodeToken feeds arbitrary strings to every decoder: none may
// panic, and whatever decodes must re-encode to the same string.
func FuzzDecodeToken(f *testing.F) {
	c := testCodec("v")
	b := testBinding()
	f.Add(c.encodeCursor(cursor{bind: b, seq: 42}))
	f.Add(c.encodeKeyset(keysetToken{bind: b, watermark: 9, pageSize: 100, offset: 3, typeIndex: 1, lastID: "abc"}))
	f.Add(c.encodeFrozen(frozenToken{bind: b, page: 2, expires: time.UnixMicro(1_800_000_000_000_000)}))
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, s string) {
		if cur, err := c.decodeCursor(s); err == nil && c.encodeCursor(cur) != s {
			t.Fatalf("cursor %q re-encodes as %q", s, c.encodeCursor(cur))
		}
		if k, err := c.decodeKeyset(s); err == nil && c.encodeKeyset(k) != s {
			t.Fatalf("keyset %q re-encodes differently", s)
		}
		if fz, err := c.decodeFrozen(s); err == nil && c.encodeFrozen(fz) != s {
			t.Fatalf("frozen %q re-encodes differently", s)
		}
	})
}

// FuzzDecodeUnsealed fuzzes the payload decoders behind the tag: it seals
// arbitrary payloads with the right key, so the decoders see every shape
// of payload, not only the ones a forged tag would let through.
func FuzzDecodeUnsealed(f *testing.F) {
	c := testCodec("v")
	f.Add(byte(kindCursor), []byte{42})
	f.Add(byte(kindKeyset), []byte{9, 100, 3, 1, 3, 'a', 'b', 'c'})
	f.Add(byte(kindFrozen), make([]byte, 20))
	f.Add(byte(kindKeyset), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, kind byte, payload []byte) {
		s := c.seal(kind, testBinding(), payload)
		_, _ = c.decodeCursor(s)
		_, _ = c.decodeKeyset(s)
		_, _ = c.decodeFrozen(s)
	})
}
