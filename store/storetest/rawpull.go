package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
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
		if appended := raw.AppendJSON(nil); !bytes.Equal(appended, marshaled) {
			t.Fatalf("pull after %d: AppendJSON = %s; want %s", after, appended, marshaled)
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
		for _, only := range [][]string{{}, {"esc"}, {"task", "note"}} {
			h.wantPartialPull(raw, after, only, nil)
		}
		after, more = page.NextCursor, page.HasMore
		if raw.NextCursor != page.NextCursor || raw.HasMore != page.HasMore {
			t.Fatalf("raw page cursor %d more %v, want %d %v", raw.NextCursor, raw.HasMore, page.NextCursor, page.HasMore)
		}
	}
}

// wantPartialPull pulls the page after after again reading the changes
// of only's types (PullOptions.ChangesOf): it must cut the same page as
// full (read whole, with limit 2), with the commits of only's types and
// those stored without a change count (uncounted, nil: none) as full has
// them, and the others without provenance and changes but with their
// change counts.
func (h *harness) wantPartialPull(full changelog.RawPullPage, after int64, only []string, uncounted func(seq int64) bool) {
	t := h.t
	t.Helper()
	got, err := h.log.PullRawWith(h.ctx, h.space, after, 2, changelog.PullOptions{ChangesOf: only})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Commits) != len(full.Commits) || got.NextCursor != full.NextCursor || got.HasMore != full.HasMore {
		t.Fatalf("ChangesOf %q after %d: %d commits to %d (more %v), want %d to %d (%v)", only, after,
			len(got.Commits), got.NextCursor, got.HasMore, len(full.Commits), full.NextCursor, full.HasMore)
	}
	for i := range got.Commits {
		g, w := got.Commits[i], full.Commits[i]
		if gn, wn := g.ChangeCount(), w.ChangeCount(); gn != wn {
			t.Fatalf("ChangesOf %q: commit %d: ChangeCount %d, want %d", only, w.Seq, gn, wn)
		}
		if !slices.Contains(only, w.Type) && (uncounted == nil || !uncounted(w.Seq)) {
			w.Changes, w.Provenance = nil, nil
		}
		if !reflect.DeepEqual(g.Row, w.Row) || !bytes.Equal(g.Receipt, w.Receipt) ||
			(g.Changes == nil) != (w.Changes == nil) || !bytes.Equal(g.Changes, w.Changes) ||
			(g.Provenance == nil) != (w.Provenance == nil) || !bytes.Equal(g.Provenance, w.Provenance) {
			t.Fatalf("ChangesOf %q: commit %d read\n%s %s %s\nwant\n%s %s %s", only, w.Seq,
				js(g.Row), g.Changes, g.Provenance, js(w.Row), w.Changes, w.Provenance)
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

// ExerciseUncounted checks reads of commits stored before their change
// count was (migration 0015): forget must clear the stored count of every
// commit of st with an odd seq, as such a commit has none. Their
// ChangeCount is counted from their changes, and a read that leaves out
// the changes of other types (ChangesOf) still reads theirs.
func ExerciseUncounted(t *testing.T, st store.Store, forget func(ctx context.Context) error) {
	h := newHarness(t, func(*testing.T) store.Store { return st }, changelog.Options{})
	h.write(put("task", "t1", `{"n":1}`), put("note", "n1", `{"a":1}`), put("note", "n2", `{"b":2}`))
	h.write(merge("note", "n1", "n2"))
	h.write(put("task", "t2", `{"n":2}`), put("note", "n3", `{}`), merge("task", "t1", "t2"))
	if err := forget(h.ctx); err != nil {
		t.Fatal(err)
	}
	odd := func(seq int64) bool { return seq%2 == 1 }
	for after, more := int64(0), true; more; {
		full, err := h.log.PullRaw(h.ctx, h.space, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i := range full.Commits {
			c, err := full.Commits[i].Decode()
			if err != nil {
				t.Fatal(err)
			}
			if n := full.Commits[i].ChangeCount(); n != len(c.Changes) {
				t.Fatalf("commit %d: ChangeCount %d, want %d", c.Seq, n, len(c.Changes))
			}
		}
		for _, only := range [][]string{{}, {"task"}} {
			h.wantPartialPull(full, after, only, odd)
		}
		after, more = full.NextCursor, full.HasMore
	}
}
