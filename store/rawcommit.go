package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// RawCommit is a whole commit with its changes, receipt and provenance
// kept as the stored JSON: a reader that only forwards commits (the log
// pull) need not decode them. encoding/json renders a RawCommit byte for
// byte as it renders the Commit that Decode returns.
type RawCommit struct {
	Row
	Changes    json.RawMessage `json:"changes"`
	Receipt    json.RawMessage `json:"receipt"`
	Provenance json.RawMessage `json:"provenance"`
	// changeCount is ChangeCount's answer plus one, 0 until it is asked.
	changeCount int
}

// ChangeCount returns the number of changes without decoding them: the
// count the driver read with the commit (SetChangeCount), else the
// elements of the stored JSON array. A count found by scanning is kept,
// so a page cut twice (a pull, then the evaluator's batches) scans each
// commit once; like any write to r, it must not race with another use
// of r.
func (r *RawCommit) ChangeCount() int {
	if r.changeCount == 0 {
		r.changeCount = arrayLen(r.Changes) + 1
	}
	return r.changeCount - 1
}

// SetChangeCount records the number of changes as stored with the commit,
// for ChangeCount; a driver sets it when it reads the count, and must
// when it leaves Changes out (CommitsParams.ChangesOf).
func (r *RawCommit) SetChangeCount(n int) { r.changeCount = n + 1 }

// Decode returns the commit with its JSON decoded and normalized as the
// drivers' Commits return it (NormalizeChange, NormalizeReceipt).
func (r *RawCommit) Decode() (Commit, error) {
	c := Commit{Row: r.Row, Changes: []Change{}}
	changes, err := r.DecodeChanges()
	if err != nil {
		return c, err
	}
	c.Changes = changes
	if len(r.Receipt) > 0 {
		if err := json.Unmarshal(r.Receipt, &c.Receipt); err != nil {
			return c, fmt.Errorf("seq %d: decode receipt: %w", r.Seq, err)
		}
		c.Receipt = NormalizeReceipt(c.Receipt)
	}
	if err := json.Unmarshal(r.Provenance, &c.Provenance); err != nil {
		return c, fmt.Errorf("seq %d: decode provenance: %w", r.Seq, err)
	}
	return c, nil
}

// DecodeChanges returns the commit's changes decoded and normalized as
// Decode returns them (never nil), leaving the receipt and provenance
// alone: for a reader that needs the changes of only some commits.
func (r *RawCommit) DecodeChanges() ([]Change, error) {
	var changes []Change
	if err := json.Unmarshal(r.Changes, &changes); err != nil {
		return []Change{}, fmt.Errorf("seq %d: decode changes: %w", r.Seq, err)
	}
	if changes == nil {
		changes = []Change{}
	}
	for i := range changes {
		NormalizeChange(&changes[i])
	}
	return changes, nil
}

// NormalizeChange normalizes a decoded change in place as the drivers
// store it: snapshots (NormalizeSnapshot) and conflict groups never nil.
func NormalizeChange(ch *Change) {
	NormalizeSnapshot(ch.Before)
	NormalizeSnapshot(ch.After)
	if ch.ConflictGroups == nil {
		ch.ConflictGroups = []string{}
	}
}

// NormalizeSnapshot normalizes a decoded snapshot in place: links never
// nil, times in UTC at microsecond precision. nil is left alone.
func NormalizeSnapshot(r *Record) {
	if r == nil {
		return
	}
	if r.Links == nil {
		r.Links = []Link{}
	}
	r.CreatedAt = microUTC(r.CreatedAt)
	r.UpdatedAt = microUTC(r.UpdatedAt)
}

// NormalizeReceipt returns r with nil Accepted and Rejected made empty, so
// JSON shows [].
func NormalizeReceipt(r Receipt) Receipt {
	if r.Accepted == nil {
		r.Accepted = []string{}
	}
	if r.Rejected == nil {
		r.Rejected = []RejectedProperty{}
	}
	return r
}

// microUTC normalizes t to UTC at microsecond precision, the precision
// both drivers store.
func microUTC(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// arrayLen counts the elements of a JSON array (0 for anything else)
// without decoding them: the commas at depth one outside strings. Most
// of a change is inside strings (keys, ids, text), so it jumps from each
// opening quote to the closing one with bytes.IndexByte.
func arrayLen(raw []byte) int {
	raw = bytes.TrimLeft(raw, " \t\n\r")
	if len(raw) == 0 || raw[0] != '[' {
		return 0
	}
	depth, n, empty := 0, 0, true
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '"':
			i = stringEnd(raw, i+1)
		case '[', '{':
			depth++
			if depth == 1 {
				continue
			}
		case ']', '}':
			depth--
		case ',':
			if depth == 1 {
				n++
			}
		case ' ', '\t', '\n', '\r':
			continue
		}
		if depth >= 1 {
			empty = false
		}
	}
	if empty {
		return 0
	}
	return n + 1
}

// stringEnd returns the index of the quote that closes the string whose
// text starts at i (len(raw) when it is not closed): the first quote not
// escaped by an odd run of backslashes.
func stringEnd(raw []byte, i int) int {
	for {
		q := bytes.IndexByte(raw[i:], '"')
		if q < 0 {
			return len(raw)
		}
		q += i
		b := q
		for b > i && raw[b-1] == '\\' {
			b--
		}
		if (q-b)%2 == 0 {
			return q
		}
		i = q + 1
	}
}
