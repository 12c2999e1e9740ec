package engine

import (
	"regexp"
	"testing"
)

// TestDeliveryIDs: a delivery id is dlv_, ten characters of the time and
// sixteen random ones (sortid), distinct, and one made later never sorts
// earlier by its time part. sortid's tests cover the order itself.
func TestDeliveryIDs(t *testing.T) {
	shape := regexp.MustCompile(`^dlv_[2-7a-z]{26}$`)
	a, b := newDeliveryID(), newDeliveryID()
	if !shape.MatchString(a) || !shape.MatchString(b) || a[4:14] > b[4:14] || a == b {
		t.Fatalf("two fresh ids %q, %q: want the shape, the second's time no earlier, and distinct", a, b)
	}
}
