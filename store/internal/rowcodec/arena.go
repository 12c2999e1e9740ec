package rowcodec

import (
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eddy-run/eddy/store"
)

// Arena reads a page of whole commits as stored (store.RawCommit) with a
// few allocations per page instead of several per row: every text
// column of every row is copied into blocks of memory, the strings into
// blocks that each become one string and the JSON into blocks whose
// slices the commits keep. A value that does not fit the current block
// starts a new one, sized for the rows the page is still expected to
// hold, so nothing copied in is ever copied again as the page grows.
// Scan a row into Dest, call Add, and take the page with Commits; or,
// for wire rows alone, scan into RowDest and take the page with Rows.
//
// Dest's columns are, in order: seq, ts, actor, op, entity_id,
// entity_type, payload, receipt, provenance, changes, change_count (a
// driver selects them so). NULL provenance and changes were left unread
// (store.CommitsParams.ChangesOf); a NULL change_count was not stored.
// An Arena is for one page; it is not safe for concurrent use.
type Arena struct {
	text, json blocks
	seq        int64
	ts         time.Time
	// count is scanned by value: a **int32 would make pgx allocate an
	// int32 for every row.
	count pgtype.Int4
	cols  [arenaCols]arenaCol
	dest  []any
	rows  []arenaRow
	// expect is the number of rows the page is expected to hold.
	expect int
}

// The columns an Arena copies: the row's strings, then its JSON.
const (
	colActor = iota
	colOp
	colEntityID
	colType
	colPayload
	colReceipt
	colProvenance
	colChanges
	arenaCols
	firstJSONCol = colPayload
)

// Block sizes: the first block has room for firstBlockRows rows (a tail
// read that finds one row sets aside little); later ones for the rest of
// the expected page, at least minBlock and at most maxBlock bytes unless
// one value needs more.
const (
	firstBlockRows = 16
	textRowBytes   = 32
	minBlock       = 4 << 10
	maxBlock       = 1 << 20
)

// ref is where a column's bytes lie: a block and a span in it; block -1
// for NULL.
type ref struct{ block, lo, hi int32 }

// null is the ref of a NULL column.
var null = ref{block: -1}

// blocks is an append-only buffer made of blocks that are never moved.
type blocks struct {
	all  [][]byte
	used int
	// rowBytes estimates the bytes one row puts here, until rows are read.
	rowBytes int
}

// add copies b into the current block, or into a new one when it does
// not fit, and returns where it lies. rows is the number of rows added
// so far and expect the number the page is expected to hold.
func (bs *blocks) add(b []byte, rows, expect int) ref {
	last := len(bs.all) - 1
	if last < 0 || cap(bs.all[last])-len(bs.all[last]) < len(b) {
		bs.all = append(bs.all, make([]byte, 0, bs.nextSize(len(b), rows, expect)))
		last++
	}
	cur := bs.all[last]
	lo := len(cur)
	bs.all[last] = append(cur, b...)
	bs.used += len(b)
	return ref{int32(last), int32(lo), int32(lo + len(b))}
}

// nextSize sizes a new block that must hold need bytes: the rest of the
// expected page at the mean row size so far (the estimate before the
// first row; firstBlockRows rows for the first block) and a quarter
// more, so the page's last rows rarely spill into a block of their own;
// past the expected page, at least twice the last block, so an
// unexpectedly long page takes few blocks.
func (bs *blocks) nextSize(need, rows, expect int) int {
	perRow := bs.rowBytes
	if rows > 0 {
		perRow = bs.used/rows + 1
	}
	wantRows := expect - rows
	if len(bs.all) == 0 {
		wantRows = min(wantRows, firstBlockRows)
	}
	size := max(wantRows*perRow*5/4, minBlock)
	if n := len(bs.all); n > 0 && rows >= expect {
		size = max(size, 2*cap(bs.all[n-1]))
	}
	return max(min(size, maxBlock), need)
}

// arenaRow is one row scanned: its seq, ts and stored change count (-1
// when none) and where its columns lie.
type arenaRow struct {
	seq   int64
	ts    time.Time
	count int32
	refs  [arenaCols]ref
}

// arenaCol is the scan destination of one text column: it copies the
// column's bytes into the arena and notes where they lie.
type arenaCol struct {
	a   *Arena
	buf *blocks
	at  ref
}

// ScanBytes copies a column read by pgx (pgtype.BytesScanner; b is valid
// only during the call, nil for NULL).
func (c *arenaCol) ScanBytes(b []byte) error {
	if b == nil {
		c.at = null
		return nil
	}
	c.at = c.buf.add(b, len(c.a.rows), c.a.expect)
	return nil
}

// NewArena returns an empty arena for a page of about rows rows of
// rowBytes bytes of JSON each (estimates; 0 when unknown).
func NewArena(rows, rowBytes int) *Arena {
	a := &Arena{expect: max(rows, 1)}
	a.json.rowBytes, a.text.rowBytes = max(rowBytes, 0), textRowBytes
	a.rows = make([]arenaRow, 0, min(a.expect, firstBlockRows))
	for i := range a.cols {
		a.cols[i].a, a.cols[i].buf, a.cols[i].at = a, &a.json, null
		if i < firstJSONCol {
			a.cols[i].buf = &a.text
		}
	}
	a.dest = append(make([]any, 0, 3+arenaCols), &a.seq, &a.ts)
	for i := range a.cols {
		a.dest = append(a.dest, &a.cols[i])
	}
	a.dest = append(a.dest, &a.count)
	return a
}

// Dest returns the scan destinations of a row, in the order the Arena
// doc gives; the same slice for every row.
func (a *Arena) Dest() []any { return a.dest }

// RowDest returns the scan destinations of a wire row: Dest's first
// seven (seq, ts, actor, op, entity_id, entity_type, payload). The
// columns it leaves out stay NULL.
func (a *Arena) RowDest() []any { return a.dest[:2+colPayload+1] }

// Add records the row just scanned into Dest.
func (a *Arena) Add() {
	r := arenaRow{seq: a.seq, ts: a.ts.UTC(), count: -1}
	if a.count.Valid {
		r.count = a.count.Int32
	}
	for i := range a.cols {
		r.refs[i] = a.cols[i].at
	}
	if len(a.rows) == cap(a.rows) {
		a.rows = growRows(a.rows, a.expect)
	}
	a.rows = append(a.rows, r)
}

// growRows makes room for the rest of the expected page at once (or
// doubles past it).
func growRows(rows []arenaRow, expect int) []arenaRow {
	grown := make([]arenaRow, len(rows), max(expect, 2*cap(rows)))
	copy(grown, rows)
	return grown
}

// JSONBytesPerRow returns the mean size of the rows' JSON so far, for the
// next arena's rowBytes (0 before the first row).
func (a *Arena) JSONBytesPerRow() int {
	if len(a.rows) == 0 {
		return 0
	}
	return a.json.used / len(a.rows)
}

// Commits returns the rows added, in order, as raw commits (a non-nil
// slice), each with its stored change count when it has one; an empty
// receipt stays empty (not read), and provenance and changes left unread
// are nil. The arena must not be used after.
func (a *Arena) Commits() []store.RawCommit {
	v := a.view()
	out := make([]store.RawCommit, len(a.rows))
	for i := range a.rows {
		r := &a.rows[i]
		out[i] = store.RawCommit{
			Row:        v.row(r),
			Changes:    v.raw(r.refs[colChanges]),
			Receipt:    v.raw(r.refs[colReceipt]),
			Provenance: v.raw(r.refs[colProvenance]),
		}
		if r.count >= 0 {
			out[i].SetChangeCount(int(r.count))
		}
	}
	a.rows, a.text, a.json = nil, blocks{}, blocks{}
	return out
}

// Rows returns the rows added, in order, as wire rows (a non-nil slice).
// A page that left most of its blocks' room unused (a tail read that
// found a row or two) is first copied into blocks of its exact size, so
// rows a caller keeps hold no spare room. The arena must not be used
// after.
func (a *Arena) Rows() []store.Row {
	a.fit()
	v := a.view()
	out := make([]store.Row, len(a.rows))
	for i := range a.rows {
		out[i] = v.row(&a.rows[i])
	}
	a.rows, a.text, a.json = nil, blocks{}, blocks{}
	return out
}

// view reads the values of an arena's refs: one string per text block
// (the strings of a page share it) and slices of the JSON blocks.
type view struct {
	texts []string
	json  [][]byte
}

func (a *Arena) view() view {
	texts := make([]string, len(a.text.all))
	for i, b := range a.text.all {
		texts[i] = string(b)
	}
	return view{texts: texts, json: a.json.all}
}

func (v view) str(r ref) string { return v.texts[r.block][r.lo:r.hi] }

func (v view) raw(r ref) json.RawMessage {
	if r.block < 0 {
		return nil
	}
	return json.RawMessage(v.json[r.block][r.lo:r.hi:r.hi])
}

// row returns the wire row of r.
func (v view) row(r *arenaRow) store.Row {
	return store.Row{Seq: r.seq, TS: r.ts, Actor: v.str(r.refs[colActor]), Op: v.str(r.refs[colOp]),
		EntityID: v.str(r.refs[colEntityID]), Type: v.str(r.refs[colType]), Payload: v.raw(r.refs[colPayload])}
}

// fit copies the text blocks, and the JSON blocks, into one block of
// their exact size when they hold more than twice the bytes used, and
// points the rows' refs there.
func (a *Arena) fit() {
	if off, ok := a.text.compact(); ok {
		a.rebase(0, firstJSONCol, off)
	}
	if off, ok := a.json.compact(); ok {
		a.rebase(firstJSONCol, arenaCols, off)
	}
}

// compact replaces bs's blocks by one holding exactly their bytes, in
// order, when they hold more than twice the bytes used; it returns where
// each old block starts in the new one.
func (bs *blocks) compact() ([]int32, bool) {
	room := 0
	for _, b := range bs.all {
		room += cap(b)
	}
	if room <= 2*bs.used {
		return nil, false
	}
	one := make([]byte, 0, bs.used)
	off := make([]int32, len(bs.all))
	for i, b := range bs.all {
		off[i] = int32(len(one))
		one = append(one, b...)
	}
	bs.all = [][]byte{one}
	return off, true
}

// rebase moves the refs of columns [from, to) of every row into the
// block compact made, whose old blocks start at off.
func (a *Arena) rebase(from, to int, off []int32) {
	for i := range a.rows {
		refs := &a.rows[i].refs
		for c := from; c < to; c++ {
			if r := refs[c]; r.block >= 0 {
				refs[c] = ref{0, r.lo + off[r.block], r.hi + off[r.block]}
			}
		}
	}
}
