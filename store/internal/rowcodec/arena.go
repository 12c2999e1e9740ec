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
// Scan a row into Dest, call Add, and take the page with Commits.
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
// first row; firstBlockRows rows for the first block), and at least
// twice the last block, so an unexpectedly long page takes few blocks.
func (bs *blocks) nextSize(need, rows, expect int) int {
	perRow := bs.rowBytes
	if rows > 0 {
		perRow = bs.used/rows + 1
	}
	wantRows := expect - rows
	if len(bs.all) == 0 {
		wantRows = min(wantRows, firstBlockRows)
	}
	size := max(wantRows*perRow, minBlock)
	if n := len(bs.all); n > 0 {
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
		a.cols[i].a, a.cols[i].buf = a, &a.json
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
	texts := make([]string, len(a.text.all))
	for i, b := range a.text.all {
		texts[i] = string(b)
	}
	str := func(r ref) string { return texts[r.block][r.lo:r.hi] }
	raw := func(r ref) json.RawMessage {
		if r.block < 0 {
			return nil
		}
		return json.RawMessage(a.json.all[r.block][r.lo:r.hi:r.hi])
	}
	out := make([]store.RawCommit, len(a.rows))
	for i := range a.rows {
		r := &a.rows[i]
		out[i] = store.RawCommit{
			Row: store.Row{Seq: r.seq, TS: r.ts, Actor: str(r.refs[colActor]), Op: str(r.refs[colOp]),
				EntityID: str(r.refs[colEntityID]), Type: str(r.refs[colType]), Payload: raw(r.refs[colPayload])},
			Changes:    raw(r.refs[colChanges]),
			Receipt:    raw(r.refs[colReceipt]),
			Provenance: raw(r.refs[colProvenance]),
		}
		if r.count >= 0 {
			out[i].SetChangeCount(int(r.count))
		}
	}
	a.rows, a.text, a.json = nil, blocks{}, blocks{}
	return out
}
