package results

import (
	"math"
	"testing"
)

// The percentile rule itself is tested in internal/stats.

func TestLatencyStats(t *testing.T) {
	// Unsorted input, float noise rounded to 3 decimals.
	got := latencyStats([]float64{3.00049, 1, 2, 0.1 + 0.2})
	want := LatencyStats{Count: 4, P50: 1, P95: 3, P99: 3, Max: 3}
	if got != want {
		t.Errorf("latencyStats = %+v, want %+v", got, want)
	}
	if got := latencyStats(nil); got != (LatencyStats{}) {
		t.Errorf("latencyStats(nil) = %+v", got)
	}
	if got := roundMS(0.1 + 0.2); got != 0.3 || math.IsNaN(got) {
		t.Errorf("roundMS(0.1+0.2) = %v", got)
	}
}
