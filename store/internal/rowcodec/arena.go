package rowcodec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eddy-run/eddy/store"
)

// Arena reads a page of whole commits as stored (store.RawCommit) with a
// few allocations per page instead of several per row: every text
// column of every row is copied once into blocks of memory, the strings
// into text blocks whose bytes the rows' strings point into and the JSON
// into blocks whose slices the commits keep, and each row is built as it
// is added. A value that does not fit the current block starts a new
// one, sized for the rows the page is still expected to hold, so nothing
// copied in is ever copied again as the page grows.
//
// Scan a row into Dest, call Add, and take the page with Commits; or,
// for wire rows alone, scan into RowDest and take the page with Rows.
// Whichever of Dest and RowDest is called first decides the page's kind.
// Where the columns come back in the formats RawReadable accepts, pass
// each row's bytes to AddRaw instead of scanning it (still calling Dest
// or RowDest once, for the kind).
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
	// kind is the page's kind, set by the first call of Dest or RowDest.
	kind    pageKind
	rows    []store.Row
	commits []store.RawCommit
	// expect is the number of rows the page is expected to hold.
	expect int
}

// pageKind is what an arena's page holds.
type pageKind uint8

const (
	kindUnset pageKind = iota
	kindRows
	kindCommits
)

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

// blocks is an append-only buffer made of blocks that are never moved.
type blocks struct {
	all  [][]byte
	used int
	// rowBytes estimates the bytes one row puts here, until rows are read.
	rowBytes int
}

// add copies b into the current block, or into a new one when it does
// not fit, and returns the copy (its capacity its length, so appending to
// it cannot reach the block's next bytes). rows is the number of rows
// added so far and expect the number the page is expected to hold. A
// block's bytes, once added, are never written again: the strings of the
// page point into them (text).
func (bs *blocks) add(b []byte, rows, expect int) []byte {
	last := len(bs.all) - 1
	if last < 0 || cap(bs.all[last])-len(bs.all[last]) < len(b) {
		bs.all = append(bs.all, newBlock(bs.nextSize(len(b), rows, expect), len(b)))
		last++
	}
	cur := bs.all[last]
	lo := len(cur)
	cur = append(cur, b...)
	bs.all[last] = cur
	bs.used += len(b)
	return cur[lo:len(cur):len(cur)]
}

// newBlock returns an empty block with room for size bytes: a spare one
// (spare.go) of between half and twice that, with room for need at
// least, when there is one (a page a little longer than the last one
// then spills its last rows into one more block), else a new one.
func newBlock(size, need int) []byte {
	if b := spareBlock(max(need, size/2), 2*size); b != nil {
		return b
	}
	return make([]byte, 0, size)
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

// arenaCol is the scan destination of one text column: it copies the
// column's bytes into the arena and keeps the copy (nil for NULL).
type arenaCol struct {
	a   *Arena
	buf *blocks
	val []byte
}

// ScanBytes copies a column read by pgx (pgtype.BytesScanner; b is valid
// only during the call, nil for NULL).
func (c *arenaCol) ScanBytes(b []byte) error {
	if b == nil {
		c.val = nil
		return nil
	}
	c.val = c.buf.add(b, c.a.added(), c.a.expect)
	return nil
}

// str returns the column's text as a string that shares the arena's
// block (text blocks are never written again once added to).
func (c *arenaCol) str() string {
	if len(c.val) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(c.val), len(c.val))
}

// raw returns the column's JSON, nil for NULL.
func (c *arenaCol) raw() json.RawMessage { return json.RawMessage(c.val) }

// NewArena returns an empty arena for a page of about rows rows of
// rowBytes bytes of JSON each (estimates; 0 when unknown).
func NewArena(rows, rowBytes int) *Arena {
	a := &Arena{expect: max(rows, 1)}
	a.json.rowBytes, a.text.rowBytes = max(rowBytes, 0), textRowBytes
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
// doc gives; the same slice for every row. The page holds whole commits
// (Commits) unless RowDest was called first.
func (a *Arena) Dest() []any {
	a.setKind(kindCommits)
	return a.dest
}

// RowDest returns the scan destinations of a wire row: Dest's first
// seven (seq, ts, actor, op, entity_id, entity_type, payload). The
// columns it leaves out stay NULL. The page holds wire rows (Rows)
// unless Dest was called first.
func (a *Arena) RowDest() []any {
	a.setKind(kindRows)
	return a.dest[:2+colPayload+1]
}

func (a *Arena) setKind(k pageKind) {
	if a.kind == kindUnset {
		a.kind = k
	}
}

// Add builds the row just scanned into Dest (or RowDest) and keeps it.
func (a *Arena) Add() {
	c := &a.cols
	row := store.Row{Seq: a.seq, TS: a.ts.UTC(), Actor: c[colActor].str(), Op: c[colOp].str(),
		EntityID: c[colEntityID].str(), Type: c[colType].str(), Payload: c[colPayload].raw()}
	if a.kind != kindCommits {
		if len(a.rows) == cap(a.rows) {
			a.rows = grow(a.rows, a.expect, spareRows)
		}
		a.rows = append(a.rows, row)
		return
	}
	rc := store.RawCommit{Row: row, Changes: c[colChanges].raw(), Receipt: c[colReceipt].raw(), Provenance: c[colProvenance].raw()}
	if a.count.Valid {
		rc.SetChangeCount(int(a.count.Int32))
	}
	if len(a.commits) == cap(a.commits) {
		a.commits = grow(a.commits, a.expect, spareCommits)
	}
	a.commits = append(a.commits, rc)
}

// grow returns full rows with room for the rest of the expected page (at
// most firstBlockRows for the first row, so a tail read that finds one
// row sets aside little), or twice the room past it: a spare slice when
// spare has one, else a new one.
func grow[T any](rows []T, expect int, spare func(int) []T) []T {
	size := max(expect, 2*cap(rows))
	if cap(rows) == 0 {
		size = min(expect, firstBlockRows)
	}
	grown := spare(size)
	if grown == nil {
		grown = make([]T, 0, size)
	}
	return append(grown, rows...)
}

// RawReadable reports whether rows described by fds can be added with
// AddRaw: seq as binary int8, ts as binary timestamptz, then text columns
// (whose binary and text formats are the same bytes), then, for Dest's
// eleven columns, the change count as binary int4. pgx reads them so
// with its default (cached, extended) protocol; a connection set to
// another mode, or columns of other types, are scanned through Dest.
func RawReadable(fds []pgconn.FieldDescription) bool {
	n := len(fds)
	if n != 2+colPayload+1 && n != 3+arenaCols {
		return false
	}
	if !binaryOf(fds[0], pgtype.Int8OID) || !binaryOf(fds[1], pgtype.TimestamptzOID) {
		return false
	}
	for _, fd := range fds[2:min(n, 2+arenaCols)] {
		if fd.DataTypeOID != pgtype.TextOID {
			return false
		}
	}
	return n != 3+arenaCols || binaryOf(fds[n-1], pgtype.Int4OID)
}

func binaryOf(fd pgconn.FieldDescription, oid uint32) bool {
	return fd.DataTypeOID == oid && fd.Format == pgtype.BinaryFormatCode
}

// AddRaw adds a row from its columns' bytes as pgx read them (RawValues;
// nil for NULL), described by fields for which RawReadable holds: the
// same row Dest (or RowDest, for seven columns) and Add would build,
// without pgx's scan plans.
func (a *Arena) AddRaw(vals [][]byte) error {
	if len(vals[0]) != 8 || len(vals[1]) != 8 {
		return fmt.Errorf("rowcodec: a row's seq or ts is %d and %d bytes, want 8", len(vals[0]), len(vals[1]))
	}
	a.seq = int64(binary.BigEndian.Uint64(vals[0]))
	a.ts = pgTime(int64(binary.BigEndian.Uint64(vals[1])))
	for i, v := range vals[2:min(len(vals), 2+arenaCols)] {
		if err := a.cols[i].ScanBytes(v); err != nil {
			return err
		}
	}
	a.count = pgtype.Int4{}
	if len(vals) == 3+arenaCols {
		switch v := vals[len(vals)-1]; len(v) {
		case 0:
		case 4:
			a.count = pgtype.Int4{Int32: int32(binary.BigEndian.Uint32(v)), Valid: true}
		default:
			return fmt.Errorf("rowcodec: a row's change count is %d bytes, want 4", len(v))
		}
	}
	a.Add()
	return nil
}

// pgEpoch is PostgreSQL's epoch, 2000-01-01 UTC, in Unix microseconds.
const pgEpoch = 946_684_800_000_000

// pgTime returns the time of a binary timestamptz: microseconds since
// 2000-01-01 UTC.
func pgTime(us int64) time.Time {
	us += pgEpoch
	return time.Unix(us/1_000_000, us%1_000_000*1000).UTC()
}

// added returns the number of rows added so far.
func (a *Arena) added() int { return len(a.rows) + len(a.commits) }

// JSONBytesPerRow returns the mean size of the rows' JSON so far, for the
// next arena's rowBytes (0 before the first row).
func (a *Arena) JSONBytesPerRow() int {
	if a.added() == 0 {
		return 0
	}
	return a.json.used / a.added()
}

// Commits returns the rows added, in order, as raw commits (a non-nil
// slice), each with its stored change count when it has one; an empty
// receipt stays empty (not read), and provenance and changes left unread
// are nil. The arena must not be used after.
func (a *Arena) Commits() []store.RawCommit {
	out := a.commits
	if out == nil {
		out = []store.RawCommit{}
	}
	a.commits, a.text, a.json = nil, blocks{}, blocks{}
	return out
}

// CommitsPage is Commits with the memory behind the commits, which the
// caller releases (Memory.Release) once nothing refers to them any more,
// for the next arenas to reuse.
func (a *Arena) CommitsPage() ([]store.RawCommit, *Memory) {
	m := a.memory()
	return a.Commits(), m
}

// memory returns the memory behind the page added so far.
func (a *Arena) memory() *Memory {
	return &Memory{blocks: append(a.text.all, a.json.all...), commits: a.commits, rows: a.rows}
}

// RowsPage is Rows for a page whose memory the caller releases
// (Memory.Release) once nothing refers to its rows any more, for the
// next arenas to reuse: the rows stay in the blocks they were read into.
func (a *Arena) RowsPage() ([]store.Row, *Memory) {
	m := a.memory()
	out := a.rows
	if out == nil {
		out = []store.Row{}
	}
	a.rows, a.text, a.json = nil, blocks{}, blocks{}
	return out, m
}

// Rows returns the rows added, in order, as wire rows (a non-nil slice).
// A page that left most of its blocks' room unused (a tail read that
// found a row or two) is first copied into blocks of its exact size, so
// rows a caller keeps hold no spare room. The arena must not be used
// after.
func (a *Arena) Rows() []store.Row {
	a.fit()
	out := a.rows
	if out == nil {
		out = []store.Row{}
	}
	a.rows, a.text, a.json = nil, blocks{}, blocks{}
	return out
}

// fit copies the wire rows' text, and their JSON, into one block of its
// exact size when their blocks hold more than twice the bytes used, and
// points the rows there.
func (a *Arena) fit() {
	if a.text.spare() {
		one := make([]byte, 0, a.text.used)
		for i := range a.rows {
			r := &a.rows[i]
			for _, s := range [...]*string{&r.Actor, &r.Op, &r.EntityID, &r.Type} {
				*s, one = moveString(one, *s)
			}
		}
		a.text.all = [][]byte{one}
	}
	if a.json.spare() {
		one := make([]byte, 0, a.json.used)
		for i := range a.rows {
			r := &a.rows[i]
			if r.Payload != nil {
				lo := len(one)
				one = append(one, r.Payload...)
				r.Payload = json.RawMessage(one[lo:len(one):len(one)])
			}
		}
		a.json.all = [][]byte{one}
	}
}

// spare reports whether bs's blocks hold more than twice the bytes used.
func (bs *blocks) spare() bool {
	room := 0
	for _, b := range bs.all {
		room += cap(b)
	}
	return room > 2*bs.used
}

// moveString appends s to one, which has room for it (so it is never
// moved, and its bytes are never written again), and returns the copy.
func moveString(one []byte, s string) (string, []byte) {
	if s == "" {
		return "", one
	}
	lo := len(one)
	one = append(one, s...)
	return unsafe.String(&one[lo], len(s)), one
}
