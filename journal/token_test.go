package journal

import (
	"testing"
	"time"
)

var testCodec = newCodec([]byte("secret"), "s", "alice", "mail")

func testStamp() stamp {
	st := stamp{epoch: epochOf("e1"), expires: time.Date(2026, 9, 3, 12, 0, 0, 123000, time.UTC)}
	copy(st.session[:], "session-id-1")
	return st
}

// TestTokensRoundTrip: every token decodes to what was encoded, is
// deterministic, and is refused under another user, application or space
// and as another kind.
func TestTokensRoundTrip(t *testing.T) {
	st := testStamp()
	cur := cursor{stamp: st, seq: 1 << 40, skip: 3}
	s := testCodec.encodeCursor(cur)
	if got, err := testCodec.decodeCursor(s); err != nil || got != cur || testCodec.encodeCursor(got) != s {
		t.Fatalf("cursor round trip: %+v %v", got, err)
	}
	ft := fetchToken{stamp: st, position: 42}
	if got, err := testCodec.decodeFetch(testCodec.encodeFetch(ft)); err != nil || got != ft {
		t.Fatalf("fetch token round trip: %+v %v", got, err)
	}
	fa := fetchAfter{session: st.session, typ: "doc.x", id: "a:b"}
	if got, err := testCodec.decodeAfter(testCodec.encodeAfter(fa)); err != nil || got != fa {
		t.Fatalf("after round trip: %+v %v", got, err)
	}
	for _, other := range []codec{
		newCodec([]byte("secret"), "s", "bob", "mail"),
		newCodec([]byte("secret"), "s", "alice", "calendar"),
		newCodec([]byte("secret"), "t", "alice", "mail"),
		newCodec([]byte("secret"), "s", "alicem", "ail"),
		newCodec([]byte("other"), "s", "alice", "mail"),
	} {
		if _, err := other.decodeCursor(s); err == nil {
			t.Fatalf("a foreign codec accepted the cursor")
		}
	}
	if _, err := testCodec.decodeFetch(s); err == nil {
		t.Fatal("a cursor decoded as a fetch token")
	}
}

// FuzzDecodeCursor: no input makes the decoders panic, and whatever
// decodes encodes back to the same string.
func FuzzDecodeCursor(f *testing.F) {
	st := testStamp()
	f.Add(testCodec.encodeCursor(cursor{stamp: st, seq: 7}))
	f.Add(testCodec.encodeFetch(fetchToken{stamp: st, position: 7}))
	f.Add(testCodec.encodeAfter(fetchAfter{session: st.session, typ: "doc", id: "d1"}))
	f.Add("")
	f.Add("AQ")
	f.Add("!!")
	f.Fuzz(func(t *testing.T, s string) {
		if cur, err := testCodec.decodeCursor(s); err == nil && testCodec.encodeCursor(cur) != s {
			t.Fatalf("cursor %q re-encodes differently", s)
		}
		if ft, err := testCodec.decodeFetch(s); err == nil && testCodec.encodeFetch(ft) != s {
			t.Fatalf("fetch token %q re-encodes differently", s)
		}
		if fa, err := testCodec.decodeAfter(s); err == nil && testCodec.encodeAfter(fa) != s {
			t.Fatalf("after %q re-encodes differently", s)
		}
	})
}
