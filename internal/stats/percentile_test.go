package stats

import (
	"testing"
	"time"
)

// seq is 1..n.
func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

func TestPercentile(t *testing.T) {
	twenty := make([]float64, 20)
	for i := range twenty {
		twenty[i] = float64(i + 1)
	}
	tests := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"empty", nil, 50, 0},
		{"one", []float64{7}, 99, 7},
		{"median of odd", []float64{1, 2, 3}, 50, 2},
		{"median of even is the lower", []float64{1, 2, 3, 4}, 50, 2},
		{"p95 of 20 is rank 19, not 20", twenty, 95, 19},
		{"p100 is the max", twenty, 100, 20},
		{"tiny p is the min", twenty, 0.001, 1},
		{"p0 is the min", twenty, 0, 1},
		{"p95 of 21 rounds the rank up", seq(21), 95, 20},
		{"p99 of 100", seq(100), 99, 99},
		{"p50 of 100", seq(100), 50, 50},
		{"p99 of 10 is the max", seq(10), 99, 10},
		{"over 100 clamps", seq(10), 150, 10},
		{"never interpolates", []float64{10, 1000}, 50, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
	durations := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}
	if got := Percentile(durations, 99); got != 3*time.Millisecond {
		t.Errorf("durations p99 = %v", got)
	}
}

// TestRankIsPercentilesRank: the value Percentile picks from 1..n is its
// rank, for every n and a spread of p.
func TestRankIsPercentilesRank(t *testing.T) {
	for n := 1; n <= 60; n++ {
		for _, p := range []float64{0, 0.001, 1, 49.9, 50, 90, 95, 99, 99.9, 100} {
			if got, want := Rank(n, p), int(Percentile(seq(n), p)); got != want {
				t.Fatalf("Rank(%d, %g) = %d, Percentile picks rank %d", n, p, got, want)
			}
		}
	}
}
