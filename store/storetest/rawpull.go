package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
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
	var pages [][]byte // each page's AppendJSON, for wantRecycledPull
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
		appended := raw.AppendJSON(nil)
		if !bytes.Equal(appended, marshaled) {
			t.Fatalf("pull after %d: AppendJSON = %s; want %s", after, appended, marshaled)
		}
		pages = append(pages, appended)
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
	h.wantRecycledPull(pages)
}

// wantRecycledPull pulls the whole space again in pages of 2 as the
// server does (read ahead, each page's memory recycled once encoded): the
// pages must encode as want, the pages read without recycling. Each page
// is handed back only after the next one is read, and must still encode
// the same then: a store must not reuse the memory of a page it has not
// got back.
func (h *harness) wantRecycledPull(want [][]byte) {
	t := h.t
	t.Helper()
	opts := changelog.PullOptions{ReadAhead: true, Recycle: true}
	var held changelog.RawPullPage
	var heldJSON []byte
	for i, after, more := 0, int64(0), true; more; i++ {
		page, err := h.log.PullRawWith(h.ctx, h.space, after, 2, opts)
		if err != nil {
			t.Fatal(err)
		}
		if heldJSON != nil {
			if got := held.AppendJSON(nil); !bytes.Equal(got, heldJSON) {
				t.Fatalf("recycled pull: a page changed once the next was read:\nnow %s\nwas %s", got, heldJSON)
			}
			h.log.RecycleRaw(held.Commits)
		}
		got := page.AppendJSON(nil)
		if i >= len(want) || !bytes.Equal(got, want[i]) {
			t.Fatalf("recycled pull, page %d after %d:\ngot  %s\nwant %s", i, after, got, want[min(i, len(want)-1)])
		}
		held, heldJSON = page, got
		after, more = page.NextCursor, page.HasMore
		if !more && i != len(want)-1 {
			t.Fatalf("recycled pull ended after %d pages, want %d", i+1, len(want))
		}
	}
	h.log.RecycleRaw(held.Commits)
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
	t.Helper()
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

// wantRecycledRead reads the whole space in pages of 2 through Read,
// then again as a watcher catching up does (ReadOptions.Recycle, each
// page's memory handed back): the pages must hold the same rows, with
// every filter of filters. Each page is handed back only after the next
// one is read, and must still hold its rows then.
func (h *harness) wantRecycledRead(filters ...changelog.Filter) {
	t := h.t
	t.Helper()
	for _, f := range append(filters, changelog.Filter{}) {
		want := h.readPages(f, changelog.ReadOptions{}, nil)
		var held []store.Row
		got := h.readPages(f, changelog.ReadOptions{Recycle: true}, func(i int, rows []store.Row) {
			if i > 0 {
				if !reflect.DeepEqual(held, want[i-1]) {
					t.Fatalf("recycled read: page %d changed once the next was read:\nnow %s\nwas %s", i-1, js(held), js(want[i-1]))
				}
				h.log.RecycleRows(held)
			}
			held = rows
		})
		h.log.RecycleRows(held)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("recycled read with filter %+v:\ngot  %s\nwant %s", f, js(got), js(want))
		}
	}
}

// readPages reads the space from 0 to its head in pages of 2 with f and
// opts, calling each (if not nil) with every page as read, and returns
// the pages' rows (copies, for a recycled read).
func (h *harness) readPages(f changelog.Filter, opts changelog.ReadOptions, each func(int, []store.Row)) [][]store.Row {
	var pages [][]store.Row
	for i, from := 0, int64(0); ; i++ {
		p, err := h.log.ReadWith(h.ctx, h.space, from, f, 2, opts)
		if err != nil {
			h.t.Fatal(err)
		}
		pages = append(pages, copyRows(p.Rows))
		if each != nil {
			each(i, p.Rows)
		}
		if p.Cursor >= p.Head {
			return pages
		}
		from = p.Cursor
	}
}

// copyRows returns rows with every string and payload copied.
func copyRows(rows []store.Row) []store.Row {
	out := make([]store.Row, len(rows))
	for i, r := range rows {
		r.Actor, r.Op = strings.Clone(r.Actor), strings.Clone(r.Op)
		r.EntityID, r.Type = strings.Clone(r.EntityID), strings.Clone(r.Type)
		r.Payload = slices.Clone(r.Payload)
		out[i] = r
	}
	return out
}
