package sqlite

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"testing"
)

// TestCommitWritesNoSpacesPage: a commit leaves the spaces row alone (the
// head is read from the commits), so none of its WAL frames is a page of
// the spaces table, and the head still moves with it.
func TestCommitWritesNoSpacesPage(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	newSpace(t, s, "s")
	s.ckpt.halt()
	if _, err := s.ckpt.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	c, recs := upsertCommit(1, nil, live("task", "t1", 1, `{"n":1}`), "u", "")
	commitOne(t, s, "s", c, recs)
	spaces := tablePages(t, s, "spaces")
	for _, p := range walPages(t, s) {
		if spaces[p] {
			t.Fatalf("the commit wrote page %d of the spaces table", p)
		}
	}
	if sp, err := s.SpaceGet(ctx, "s"); err != nil || sp.Head != 1 {
		t.Fatalf("SpaceGet = head %d, %v; want head 1", sp.Head, err)
	}
}

// tablePages returns the page numbers of a table or index of s.
func tablePages(t *testing.T, s *Store, name string) map[uint32]bool {
	t.Helper()
	rows, err := s.r.Query("SELECT pageno FROM dbstat WHERE name = ?", name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	pages := map[uint32]bool{}
	for rows.Next() {
		var p uint32
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		pages[p] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return pages
}

// walPages returns the page number of every frame in s's WAL file.
func walPages(t *testing.T, s *Store) []uint32 {
	t.Helper()
	wal, err := os.ReadFile(walFile(t, s))
	if err != nil {
		t.Fatal(err)
	}
	const walHeader, frameHeader = 32, 24
	pageSize := int(binary.BigEndian.Uint32(wal[8:12]))
	var pages []uint32
	for off := walHeader; off+frameHeader+pageSize <= len(wal); off += frameHeader + pageSize {
		pages = append(pages, binary.BigEndian.Uint32(wal[off:]))
	}
	return pages
}

// walFile returns the path of s's WAL file.
func walFile(t *testing.T, s *Store) string {
	t.Helper()
	var seq int
	var name, file string
	if err := s.w.QueryRow("PRAGMA database_list").Scan(&seq, &name, &file); err != nil {
		t.Fatal(err)
	}
	return file + "-wal"
}

// TestCommitAppendPages: a space's commits append at the end of its
// range of rids, where SQLite adds a page without rebalancing its
// neighbours, so a single put writes little more than one page of the
// commits table into the WAL. (Keyed by (space, seq) without rowids, the
// same puts wrote 2.4 pages each.)
func TestCommitAppendPages(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	newSpace(t, s, "a")
	newSpace(t, s, "s")
	newSpace(t, s, "z")
	s.ckpt.halt()
	seq := int64(0)
	puts := func(n int) {
		for range n {
			seq++
			c, recs := upsertCommit(seq, nil, live("note", fmt.Sprintf("e%d", seq), seq, `{"n":1,"title":"row 1234"}`), "u", "")
			commitOne(t, s, "s", c, recs)
		}
	}
	puts(200) // past the first pages, where the tree's shape changes
	if _, err := s.ckpt.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	puts(n)
	commits := tablePages(t, s, "commits")
	frames := 0
	for _, p := range walPages(t, s) {
		if commits[p] {
			frames++
		}
	}
	if perPut := float64(frames) / n; perPut > 1.5 {
		t.Fatalf("%d puts wrote %d frames of the commits table, %.2f each; want at most 1.5", n, frames, perPut)
	}
}
