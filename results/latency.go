package results

import "math"

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

// latencyStats summarizes values with the nearest-rank percentiles of
// internal/stats (observed values only); see samples, which a summary
// keeps instead of a slice.
func latencyStats(values []float64) LatencyStats {
	var s samples
	for _, v := range values {
		s.add(v)
	}
	return s.stats()
}
