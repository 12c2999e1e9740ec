package storetest

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// wantRawPull writes one more commit whose JSON needs escaping (HTML
// characters, non-ASCII, U+2028), then pulls the whole space in small
// pages both ways: PullRaw's pages must encode byte for byte as Pull's
// (with and without HTML escaping) and decode to the same commits.
func (h *harness) wantRawPull() {
	t := h.t
	t.Helper()
	h.write(put("esc", "e1", "{\"h\":\"<a&b>\",\"u\":\"é\u2028\u2029\",\"n\":1.50,\"s\":\"\\\"q\\\"\\\\\"}"))
	for after, more := int64(0), true; more; {
		page, err := h.log.Pull(h.ctx, h.space, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := h.log.PullRaw(h.ctx, h.space, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, html := range []bool{true, false} {
			if a, b := encode(t, page, html), encode(t, raw, html); !bytes.Equal(a, b) {
				t.Fatalf("pull after %d (escapeHTML %v):\nraw     %s\ndecoded %s", after, html, b, a)
			}
		}
		marshaled, err := json.Marshal(raw)
		if err != nil {
			t.Fatal(err)
		}
		if appended, err := raw.AppendJSON(nil); err != nil || !bytes.Equal(appended, marshaled) {
			t.Fatalf("pull after %d: AppendJSON = %s, %v; want %s", after, appended, err, marshaled)
		}
		if len(raw.Commits) != len(page.Commits) {
			t.Fatalf("pull after %d: %d raw commits, %d decoded", after, len(raw.Commits), len(page.Commits))
		}
		for i := range raw.Commits {
			c, err := raw.Commits[i].Decode()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c, page.Commits[i]) {
				t.Fatalf("raw commit %d decodes to %s, want %s", c.Seq, js(c), js(page.Commits[i]))
			}
			if n := raw.Commits[i].ChangeCount(); n != len(c.Changes) {
				t.Fatalf("raw commit %d: ChangeCount %d, want %d", c.Seq, n, len(c.Changes))
			}
		}
		after, more = page.NextCursor, page.HasMore
		if raw.NextCursor != page.NextCursor || raw.HasMore != page.HasMore {
			t.Fatalf("raw page cursor %d more %v, want %d %v", raw.NextCursor, raw.HasMore, page.NextCursor, page.HasMore)
		}
	}
}

// encode renders v as encoding/json does, HTML-escaped or not.
func encode(t interface{ Fatal(...any) }, v any, html bool) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
