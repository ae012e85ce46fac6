package stats

import (
	"testing"
	"time"
)

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
