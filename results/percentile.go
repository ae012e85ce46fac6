package results

import (
	"math"
	"slices"
)

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted: the smallest value such that at least p% of the values are <= it.
// Nearest rank always returns an observed value, so a p99 over a handful of
// signatures is a latency that really happened, not an interpolation. An
// empty slice yields 0.
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// p*n/100 rather than p/100*n: 95/100 is inexact in binary and
	// 0.95*20 would round up to rank 20 instead of 19.
	rank := int(math.Ceil(p * float64(n) / 100))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

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

// latencyStats sorts values in place and summarizes them.
func latencyStats(values []float64) LatencyStats {
	slices.Sort(values)
	return LatencyStats{
		Count: len(values),
		P50:   roundMS(percentile(values, 50)),
		P95:   roundMS(percentile(values, 95)),
		P99:   roundMS(percentile(values, 99)),
		Max:   roundMS(percentile(values, 100)),
	}
}
