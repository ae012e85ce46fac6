package stats

import (
	"math"
	"testing"
)

func TestSlope(t *testing.T) {
	for _, c := range []struct {
		name   string
		xs, ys []float64
		want   float64
		ok     bool
	}{
		{"line", []float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}, 2, true},
		{"flat", []float64{0, 1, 2}, []float64{4, 4, 4}, 0, true},
		{"falling", []float64{0, 10}, []float64{10, 0}, -1, true},
		{"noisy", []float64{0, 1, 2, 3}, []float64{0, 2, 0, 2}, 0.4, true},
		{"one point", []float64{1}, []float64{1}, 0, false},
		{"same x", []float64{1, 1, 1}, []float64{1, 2, 3}, 0, false},
		{"lengths differ", []float64{1, 2}, []float64{1}, 0, false},
	} {
		got, ok := Slope(c.xs, c.ys)
		if ok != c.ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: Slope = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
