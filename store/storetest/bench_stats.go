package storetest

import (
	"testing"

	"github.com/eddy-run/eddy/store"
)

// BenchDeliveryStats runs a driver's three count statements as
// sub-benchmarks on a trigger with 100,000 succeeded deliveries, 10
// pending and 10 parked (the driver fills it): before, the statement
// that counted every delivery; stats, DeliveryStats's; backlog,
// DeliveryBacklog's (the open and parked ones alone). run executes one
// statement; every call's counts are checked.
func BenchDeliveryStats(b *testing.B, run func(q string) (store.DeliveryStats, error), before, stats, backlog string) {
	b.Helper()
	for _, tc := range []struct {
		name, q string
		want    int
	}{{"before", before, 100020}, {"stats", stats, 100020}, {"backlog", backlog, 20}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				st, err := run(tc.q)
				n := 0
				for _, c := range st.ByStatus {
					n += c
				}
				if err != nil || n != tc.want {
					b.Fatalf("counted %d, %v; want %d", n, err, tc.want)
				}
			}
		})
	}
}
