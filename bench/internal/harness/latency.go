package harness

import (
	"slices"
	"time"
)

// Quantile returns the q-quantile (0 < q <= 1) of ds, nearest rank, in
// milliseconds; 0 for none. It sorts ds.
func Quantile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := min(max(int(q*float64(len(ds))+0.5)-1, 0), len(ds)-1)
	return float64(ds[i]) / float64(time.Millisecond)
}
