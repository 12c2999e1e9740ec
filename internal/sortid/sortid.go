// Package sortid makes random ids that sort by the time they were made.
//
// An id is a prefix, the time in milliseconds as ten base32 characters
// whose ASCII order is the time's, and random base32 characters. Ids
// stored as b-tree keys then land beside the ids made with them, at the
// end of the tree, instead of on a random page each. That matters most
// to SQLite, whose WAL takes a whole page for every page a transaction
// touches: a group commit of 16 new entities with random ids touched a
// random leaf of the entities table and one of the entity history index
// per entity, and wrote two to three times the pages of time-ordered ids
// (docs/storage.md, "Entity ids").
//
// Ten characters (50 bits) of milliseconds cover the years 1970 to
// about 37,600; the random part makes ids made in the same millisecond
// unique with the probability its length gives (16 characters: 80 bits).
package sortid

import (
	"crypto/rand"
	"time"
)

// Alphabet is base32 in ASCII order: the digits 2-7 sort before the
// letters. Both parts of an id use it.
const Alphabet = "234567abcdefghijklmnopqrstuvwxyz"

// TimeLen is the length of an id's time part.
const TimeLen = 10

// New returns prefix, the current time and random characters of
// Alphabet.
func New(prefix string, random int) string { return At(prefix, time.Now(), Random(random)) }

// At returns the id made at t with the given random part: prefix, t in
// milliseconds since the Unix epoch as TimeLen characters of Alphabet
// (most significant first), then random. Times before the epoch are
// taken as the epoch.
func At(prefix string, t time.Time, random string) string {
	ms := uint64(max(t.UnixMilli(), 0))
	b := make([]byte, len(prefix)+TimeLen+len(random))
	copy(b, prefix)
	for i := len(prefix) + TimeLen - 1; i >= len(prefix); i-- {
		b[i] = Alphabet[ms&31]
		ms >>= 5
	}
	copy(b[len(prefix)+TimeLen:], random)
	return string(b)
}

// Random returns n characters of Alphabet from crypto/rand, five random
// bits each.
func Random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	for i := range b {
		b[i] = Alphabet[b[i]&31]
	}
	return string(b)
}
