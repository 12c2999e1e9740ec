package storetest

import (
	"errors"
	"testing"

	"github.com/eddy-run/eddy/changelog"
	"github.com/eddy-run/eddy/store"
)

// testJournal covers the JournalStore: walking a space's entity types in
// bytewise order, tombstones included, other spaces never.
func testJournal(t *testing.T, open OpenFunc) {
	t.Parallel()
	h := newHarness(t, open, changelog.Options{})
	h.createSpace("other")
	h.write(put("task", "t1", `{}`), put("note", "n1", `{}`), put("task", "t2", `{}`), put("b.x", "1", `{}`), put("gone", "g", `{}`))
	h.write(del("gone", "g"))
	h.writeReq(changelog.WriteRequest{Space: "other", Mutations: []changelog.Mutation{put("a", "1", `{}`), put("z", "1", `{}`)}})
	var got []string
	after := ""
	for {
		typ, err := h.st.EntityTypeAfter(h.ctx, h.space, after)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatalf("entity type after %q: %v", after, err)
		}
		got = append(got, typ)
		after = typ
	}
	want := []string{"b.x", "gone", "note", "task"}
	if js(got) != js(want) {
		t.Fatalf("types = %v, want %v", got, want)
	}
	if _, err := h.st.EntityTypeAfter(h.ctx, "missing", ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing space: err %v, want ErrNotFound", err)
	}
}
