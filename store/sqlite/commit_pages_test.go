package sqlite

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/eddy-run/eddy/store"
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
	pages := map[uint32]bool{}
	for p, n := range pageNames(t, s) {
		if n == name {
			pages[p] = true
		}
	}
	return pages
}

// The sizes of a WAL file's header and of each frame's header; the page
// size is the header's big-endian word at offset 8.
const walHeader, frameHeader = 32, 24

// walPages returns the page number of every frame in s's WAL file.
func walPages(t *testing.T, s *Store) []uint32 {
	t.Helper()
	wal, err := os.ReadFile(walFile(t, s))
	if err != nil {
		t.Fatal(err)
	}
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
	if err := s.direct().QueryRow("PRAGMA database_list").Scan(&seq, &name, &file); err != nil {
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
	pages := putPages(t)
	if got := pages["commits"]; got > 1.5 {
		t.Fatalf("a put wrote %.2f frames of the commits table; want at most 1.5 (frames a put by table: %v)", got, pages)
	}
}

// putPages appends 1,000 single puts of new entities to a space between
// two others (after 200 to shape the trees) and returns the WAL frames
// they wrote per put, by table or index.
func putPages(t *testing.T) map[string]float64 {
	t.Helper()
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
	puts(200)
	if _, err := s.ckpt.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	puts(n)
	names := pageNames(t, s)
	out := map[string]float64{}
	for _, p := range walPages(t, s) {
		out[names[p]] += 1.0 / n
	}
	return out
}

// pageNames maps each page of s to the table or index it belongs to.
func pageNames(t *testing.T, s *Store) map[uint32]string {
	t.Helper()
	rows, err := s.r.Query("SELECT pageno, name FROM dbstat")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	names := map[uint32]string{}
	for rows.Next() {
		var p uint32
		var name string
		if err := rows.Scan(&p, &name); err != nil {
			t.Fatal(err)
		}
		names[p] = name
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestNewEntitiesAppendToHistoryIndex: a transaction of 16 new entities
// named at random, in a space of 10,000 named alike, writes the right
// edge of the entity history index, which is keyed by entity number
// (migration 0019): 2.65 frames a group here, against 18.05 when it was
// keyed by id and took a random leaf per entity. (The entities table
// itself is keyed by id and still does.)
func TestNewEntitiesAppendToHistoryIndex(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	newSpace(t, s, "s")
	rng := rand.New(rand.NewPCG(1, 2))
	seq := int64(0)
	batch := func(n int) {
		t.Helper()
		commits, recs := make([]store.Commit, n), make([][]store.Record, n)
		for i := range n {
			seq++
			commits[i], recs[i] = upsertCommit(seq, nil, live("note", fmt.Sprintf("%016x", rng.Uint64()), seq, `{"n":1}`), "u", "")
		}
		tx, err := s.WriteBegin(ctx, store.WriteBeginParams{Space: "s"})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if err := tx.(store.BatchAppender).AppendBatch(ctx, commits, recs); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 200 {
		batch(50)
	}
	s.ckpt.halt()
	if _, err := s.ckpt.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	const groups = 20
	for range groups {
		batch(16)
	}
	names := pageNames(t, s)
	frames := map[string]float64{}
	for _, p := range walPages(t, s) {
		frames[names[p]] += 1.0 / groups
	}
	if got := frames["commits_entity"]; got > 6 {
		t.Fatalf("a group of 16 new entities wrote %.2f frames of the entity history index; want at most 6 (frames a group by table: %v)", got, frames)
	}
	t.Logf("frames a group of 16 new entities, by table: %v", frames)
}
