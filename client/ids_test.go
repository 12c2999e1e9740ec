package client

import (
	"regexp"
	"testing"
)

// TestNewID: ids have the server's shape, differ, and one made later
// never sorts earlier by its time part.
func TestNewID(t *testing.T) {
	shape := regexp.MustCompile(`^[2-7a-z]{22}$`)
	prev := ""
	seen := map[string]bool{}
	for range 100 {
		id := NewID()
		if !shape.MatchString(id) || seen[id] || id[:10] < prev {
			t.Fatalf("id %q (previous time part %q): want 22 base32 characters, new, time part no earlier", id, prev)
		}
		seen[id], prev = true, id[:10]
	}
}
