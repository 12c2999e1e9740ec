package postgres

import (
	"testing"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// TestLentPages: a page lent is taken back, once, by any slice of it
// that starts where it does (a prefix, or the page filtered in place to
// nothing); a slice starting elsewhere, or with no room, takes nothing;
// past maxLentPages the oldest page is forgotten.
func TestLentPages(t *testing.T) {
	var l lentPages
	pages := make([][]store.Row, maxLentPages+1)
	mems := make([]*rowcodec.Memory, len(pages))
	for i := range pages {
		pages[i] = make([]store.Row, 3)
		mems[i] = new(rowcodec.Memory)
		l.lend(start(pages[i]), mems[i])
	}
	if m := l.take(start(pages[0])); m != nil {
		t.Fatal("the oldest page was still lent past maxLentPages")
	}
	if m := l.take(start(pages[1][:1])); m != mems[1] {
		t.Fatal("a prefix of a lent page did not take its memory back")
	}
	if m := l.take(start(pages[1])); m != nil {
		t.Fatal("a page was taken back twice")
	}
	if m := l.take(start(pages[2][1:])); m != nil {
		t.Fatal("a slice starting inside a page took its memory")
	}
	if m := l.take(start([]store.Row(nil))); m != nil {
		t.Fatal("a slice with no room took memory")
	}
	if m := l.take(start(pages[2][:0])); m != mems[2] {
		t.Fatal("a page filtered to nothing in place did not take its memory back")
	}
	l.lend(start([]store.RawCommit{}), new(rowcodec.Memory))
	if len(l.pages) != maxLentPages-2 || len(l.order) != len(l.pages) {
		t.Fatalf("lent pages: a map of %d and an order of %d, want %d", len(l.pages), len(l.order), maxLentPages-2)
	}
	for i := 3; i < len(pages); i++ {
		if m := l.take(start(pages[i])); m != mems[i] {
			t.Fatalf("page %d was not taken back", i)
		}
	}
}
