package results

import (
	"math"
	"testing"
)

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"empty", nil, 50, 0},
		{"single p50", []float64{7}, 50, 7},
		{"single p99", []float64{7}, 99, 7},
		{"p0 is the minimum", seq(10), 0, 1},
		{"p50 of even count is the lower middle", []float64{1, 2, 3, 4}, 50, 2},
		{"p50 of odd count", []float64{1, 2, 3}, 50, 2},
		{"p95 of 20 is rank 19, not 20", seq(20), 95, 19},
		{"p95 of 21 rounds the rank up", seq(21), 95, 20},
		{"p99 of 100", seq(100), 99, 99},
		{"p99 of 10 is the max", seq(10), 99, 10},
		{"p100 is the max", seq(10), 100, 10},
		{"over 100 clamps", seq(10), 150, 10},
		{"never interpolates", []float64{10, 1000}, 50, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

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
