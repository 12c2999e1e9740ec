package sqlite

import "strconv"

// The commits table is a rowid table (migration 0016) whose rowid, rid,
// is (space number << seqBits) + seq. A space's commits are one range of
// rids in seq order, so its reads walk the table in order and its
// appends go to the range's end, where SQLite's quick balance adds a
// page instead of rebalancing three. spaces.num is the space number,
// given at creation and never reused.
const seqBits = 40

// lastSeq is the greatest seq a rid can hold.
const lastSeq = 1<<seqBits - 1

// sqlLastSeq is lastSeq as an SQL literal.
var sqlLastSeq = strconv.FormatInt(lastSeq, 10)

// ridBase returns SQL for the rid of seq 0 in the space whose number is
// the SQL expression num.
func ridBase(num string) string { return "(" + num + " << " + strconv.Itoa(seqBits) + ")" }

// ridBaseOf returns SQL for the rid of seq 0 in the space whose id is the
// SQL expression id (NULL when there is no such space, so every
// comparison with it fails).
func ridBaseOf(id string) string {
	return "(SELECT " + ridBase("num") + " FROM spaces WHERE id = " + id + ")"
}

// ridRange returns the SQL condition that the rid column col lies in the
// space whose rid of seq 0 is base, with lo < seq <= hi (SQL expressions).
// It bounds the rowid on both sides, so SQLite searches the range.
func ridRange(col, base, lo, hi string) string {
	return col + " > " + base + " + " + lo + " AND " + col + " <= " + base + " + " + hi
}

// ridOf returns the rid of seq in the space numbered num.
func ridOf(num, seq int64) int64 { return num<<seqBits + seq }
