package sortid

import (
	"regexp"
	"testing"
	"time"
)

// TestAtSortsByTime: ids made later sort later whatever their random
// parts, across every digit of the time part, and the prefix and the
// random part are kept as given.
func TestAtSortsByTime(t *testing.T) {
	base := time.Date(2026, 12, 6, 21, 30, 0, 0, time.UTC)
	var ids []string
	for step := time.Millisecond; step < 100*365*24*time.Hour; step *= 7 {
		for _, random := range []string{"2222222222222222", "zzzzzzzzzzzzzzzz"} {
			id := At("dlv_", base.Add(step), random)
			if len(id) != 4+TimeLen+16 || id[:4] != "dlv_" || id[4+TimeLen:] != random {
				t.Fatalf("id %q at %v: want dlv_, the time, then %q", id, base.Add(step), random)
			}
			ids = append(ids, id)
		}
	}
	// Made in this order: at each time the smallest random part, then
	// the largest, so an id with the largest random part is followed by
	// one of a later time with the smallest.
	for i := 1; i < len(ids); i++ {
		if ids[i-1] >= ids[i] {
			t.Fatalf("%q (made earlier) sorts at or after %q", ids[i-1], ids[i])
		}
	}
	// Each digit of the time part through all 32 values, in order.
	for pos, unit := 0, int64(1); pos < TimeLen; pos, unit = pos+1, unit*32 {
		prev := ""
		for v := range int64(32) {
			id := At("", time.UnixMilli(v*unit), "")
			if id <= prev {
				t.Fatalf("digit %d: value %d gives %q, not after %q", pos, v, id, prev)
			}
			prev = id
		}
	}
	if got := At("x_", time.UnixMilli(0), "22"); got != "x_222222222222" {
		t.Fatalf("id at the epoch = %q", got)
	}
	if got := At("", time.UnixMilli(-5), ""); got != "2222222222" {
		t.Fatalf("id before the epoch = %q, want the epoch's", got)
	}
}

// TestNew: fresh ids have the shape, distinct random parts, and time
// parts that do not go backwards.
func TestNew(t *testing.T) {
	shape := regexp.MustCompile(`^e_[2-7a-z]{20}$`)
	seen := map[string]bool{}
	prev := ""
	for range 1000 {
		id := New("e_", 10)
		if !shape.MatchString(id) {
			t.Fatalf("id %q: want e_ and 20 characters of the alphabet", id)
		}
		if seen[id] {
			t.Fatalf("id %q made twice", id)
		}
		seen[id] = true
		if tp := id[:2+TimeLen]; tp < prev {
			t.Fatalf("time part %q after %q", tp, prev)
		} else {
			prev = tp
		}
	}
}

// TestRandomUsesTheWholeAlphabet: every character of Alphabet turns up
// in random parts, and nothing else does.
func TestRandomUsesTheWholeAlphabet(t *testing.T) {
	seen := map[rune]bool{}
	for range 200 {
		for _, c := range Random(16) {
			seen[c] = true
		}
	}
	for _, c := range Alphabet {
		if !seen[c] {
			t.Errorf("character %q never drawn", c)
		}
		delete(seen, c)
	}
	if len(seen) != 0 {
		t.Errorf("characters outside the alphabet: %v", seen)
	}
}
