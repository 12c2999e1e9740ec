package engine

import (
	"regexp"
	"testing"
	"time"
)

// TestDeliveryIDsSortByTime: an id is dlv_, ten characters of the time
// and sixteen random ones, all of randomID's alphabet, and ids made later
// sort later whatever their random parts, across every digit of the
// time part.
func TestDeliveryIDsSortByTime(t *testing.T) {
	shape := regexp.MustCompile(`^dlv_[2-7a-z]{26}$`)
	base := time.Date(2026, 12, 6, 21, 30, 0, 0, time.UTC)
	var ids []string
	for step := time.Millisecond; step < 100*365*24*time.Hour; step *= 7 {
		for _, random := range []string{"2222222222222222", "zzzzzzzzzzzzzzzz"} {
			id := deliveryID(base.Add(step), random)
			if !shape.MatchString(id) || id[14:] != random {
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
	for pos, unit := 0, int64(1); pos < 10; pos, unit = pos+1, unit*32 {
		prev := ""
		for v := range int64(32) {
			id := deliveryID(time.UnixMilli(v*unit), "2222222222222222")
			if id <= prev {
				t.Fatalf("digit %d: value %d gives %q, not after %q", pos, v, id, prev)
			}
			prev = id
		}
	}
	if got := deliveryID(time.UnixMilli(0), "2222222222222222"); got != "dlv_22222222222222222222222222" {
		t.Fatalf("id at the epoch = %q", got)
	}
	a, b := newDeliveryID(), newDeliveryID()
	if !shape.MatchString(a) || a[4:14] > b[4:14] || a == b {
		t.Fatalf("two fresh ids %q, %q: want the shape, the second's time no earlier, and distinct", a, b)
	}
}
