package rowcodec

import (
	"encoding/json"
	"time"

	"github.com/eddy-run/eddy/store"
)

// Arena reads a page of whole commits as stored (store.RawCommit) with a
// few allocations per page instead of several per row: every text
// column of every row is copied into one of two buffers, the strings
// into one that becomes a single string and the JSON into one whose
// slices the commits keep. Scan a row into Dest, call Add, and take the
// page with Commits.
//
// Dest's columns are, in order: seq, ts, actor, op, entity_id,
// entity_type, payload, receipt, provenance, changes (a driver selects
// them so). An Arena is for one page; it is not safe for concurrent use.
type Arena struct {
	text, json []byte
	seq        int64
	ts         time.Time
	cols       [arenaCols]arenaCol
	dest       []any
	rows       []arenaRow
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

// span is a column's bytes in one of the arena's buffers.
type span struct{ lo, hi int }

// arenaRow is one row scanned: its seq and ts and where its columns lie.
type arenaRow struct {
	seq   int64
	ts    time.Time
	spans [arenaCols]span
}

// arenaCol is the scan destination of one text column: it appends the
// column's bytes to its buffer and notes where they lie.
type arenaCol struct {
	buf *[]byte
	at  span
}

// ScanBytes copies a column read by pgx (pgtype.BytesScanner; b is valid
// only during the call).
func (c *arenaCol) ScanBytes(b []byte) error {
	lo := len(*c.buf)
	*c.buf = append(*c.buf, b...)
	c.at = span{lo, len(*c.buf)}
	return nil
}

// NewArena returns an empty arena with room for rows rows of rowBytes
// bytes of JSON each (estimates; 0 when unknown), so a page's buffers
// need not grow while it is read.
func NewArena(rows, rowBytes int) *Arena {
	rows, rowBytes = max(rows, 0), max(rowBytes, 0)
	a := &Arena{json: make([]byte, 0, rows*rowBytes), rows: make([]arenaRow, 0, rows)}
	for i := range a.cols {
		a.cols[i].buf = &a.json
		if i < firstJSONCol {
			a.cols[i].buf = &a.text
		}
	}
	a.dest = []any{&a.seq, &a.ts}
	for i := range a.cols {
		a.dest = append(a.dest, &a.cols[i])
	}
	return a
}

// Dest returns the scan destinations of a row, in the order the Arena
// doc gives; the same slice for every row.
func (a *Arena) Dest() []any { return a.dest }

// Add records the row just scanned into Dest.
func (a *Arena) Add() {
	r := arenaRow{seq: a.seq, ts: a.ts.UTC()}
	for i := range a.cols {
		r.spans[i] = a.cols[i].at
	}
	a.rows = append(a.rows, r)
}

// JSONBytesPerRow returns the mean size of the rows' JSON so far, for the
// next arena's rowBytes (0 before the first row).
func (a *Arena) JSONBytesPerRow() int {
	if len(a.rows) == 0 {
		return 0
	}
	return len(a.json) / len(a.rows)
}

// Commits returns the rows added, in order, as raw commits (a non-nil
// slice); an empty receipt stays empty (not read). The arena must not be
// used after.
func (a *Arena) Commits() []store.RawCommit {
	text := string(a.text)
	js := a.json[:len(a.json):len(a.json)]
	str := func(s span) string { return text[s.lo:s.hi] }
	raw := func(s span) json.RawMessage { return json.RawMessage(js[s.lo:s.hi:s.hi]) }
	out := make([]store.RawCommit, len(a.rows))
	for i := range a.rows {
		r := &a.rows[i]
		out[i] = store.RawCommit{
			Row: store.Row{Seq: r.seq, TS: r.ts, Actor: str(r.spans[colActor]), Op: str(r.spans[colOp]),
				EntityID: str(r.spans[colEntityID]), Type: str(r.spans[colType]), Payload: raw(r.spans[colPayload])},
			Changes:    raw(r.spans[colChanges]),
			Receipt:    raw(r.spans[colReceipt]),
			Provenance: raw(r.spans[colProvenance]),
		}
	}
	a.rows, a.text, a.json = nil, nil, nil
	return out
}
