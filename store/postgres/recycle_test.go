package postgres

import (
	"testing"

	"github.com/eddy-run/eddy/store"
	"github.com/eddy-run/eddy/store/internal/rowcodec"
)

// TestLentPages: a page lent is taken back by any prefix of its commits,
// once; a slice it never lent, or an empty one, takes nothing; past
// maxLentPages the oldest page is forgotten.
func TestLentPages(t *testing.T) {
	var l lentPages
	pages := make([][]store.RawCommit, maxLentPages+1)
	mems := make([]*rowcodec.Memory, len(pages))
	for i := range pages {
		pages[i] = make([]store.RawCommit, 3)
		mems[i] = new(rowcodec.Memory)
		l.lend(pages[i], mems[i])
	}
	if m := l.take(pages[0]); m != nil {
		t.Fatal("the oldest page was still lent past maxLentPages")
	}
	if m := l.take(pages[1][:1]); m != mems[1] {
		t.Fatal("a prefix of a lent page did not take its memory back")
	}
	if m := l.take(pages[1]); m != nil {
		t.Fatal("a page was taken back twice")
	}
	if m := l.take(pages[2][1:]); m != nil {
		t.Fatal("a slice starting inside a page took its memory")
	}
	if m := l.take(nil); m != nil {
		t.Fatal("an empty slice took memory")
	}
	l.lend(nil, new(rowcodec.Memory))
	if len(l.pages) != maxLentPages-1 || len(l.order) != len(l.pages) {
		t.Fatalf("lent pages: a map of %d and an order of %d, want %d", len(l.pages), len(l.order), maxLentPages-1)
	}
	for i := 2; i < len(pages); i++ {
		if m := l.take(pages[i]); m != mems[i] {
			t.Fatalf("page %d was not taken back", i)
		}
	}
}
