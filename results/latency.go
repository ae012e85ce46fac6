package results

import (
	"math"
	"slices"

	"github.com/valnet/valnet/internal/stats"
)

// roundMS rounds a millisecond value to microseconds (3 decimals) so that
// reports and golden files do not carry float noise.
func roundMS(v float64) float64 {
	return math.Round(v*1000) / 1000
}

// LatencyStats summarizes a set of millisecond samples.
type LatencyStats struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// latencyStats sorts values in place and summarizes them, with the
// nearest-rank percentiles of internal/stats (observed values only).
func latencyStats(values []float64) LatencyStats {
	slices.Sort(values)
	return LatencyStats{
		Count: len(values),
		P50:   roundMS(stats.Percentile(values, 50)),
		P95:   roundMS(stats.Percentile(values, 95)),
		P99:   roundMS(stats.Percentile(values, 99)),
		Max:   roundMS(stats.Percentile(values, 100)),
	}
}
