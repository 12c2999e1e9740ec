package storetest

import (
	"testing"

	"github.com/eddy-run/eddy/store"
)

// StatsCase is one statement of a driver's BenchmarkDeliveryStats: run
// counts a trigger's deliveries, and the counts must add up to Want.
type StatsCase struct {
	Name string
	Want int
	Run  func() (store.DeliveryStats, error)
}

// BenchDeliveryStats runs each case as a sub-benchmark, checking its
// counts on every call.
func BenchDeliveryStats(b *testing.B, cases []StatsCase) {
	for _, tc := range cases {
		b.Run(tc.Name, func(b *testing.B) {
			for b.Loop() {
				st, err := tc.Run()
				n := 0
				for _, c := range st.ByStatus {
					n += c
				}
				if err != nil || n != tc.Want {
					b.Fatalf("counted %d, %v; want %d", n, err, tc.Want)
				}
			}
		})
	}
}
