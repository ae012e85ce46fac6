package results

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/valnet/valnet/internal/stats"
)

// TestSamplesAreTheSortedSlice: every percentile of samples is the one of
// the sorted slice of all values, with values that repeat and values that
// do not, across folds; the distinct values and counts add up to them.
func TestSamplesAreTheSortedSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, tt := range []struct {
		name string
		n    int
		draw func() float64
	}{
		{"one value", 1, func() float64 { return 0.5 }},
		{"a fixed latency", 10_000, func() float64 { return 0.5 }},
		{"a few values", 5_000, func() float64 { return float64(rng.IntN(7)) * 0.25 }},
		{"all distinct", 3_000, func() float64 { return rng.Float64() * 1000 }},
		{"mixed", 2_000, func() float64 { return []float64{-1, 0, 2.5, rng.Float64()}[rng.IntN(4)] }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s samples
			var all []float64
			for range tt.n {
				v := tt.draw()
				s.add(v)
				all = append(all, v)
			}
			slices.Sort(all)
			for _, p := range []float64{0, 1, 50, 95, 99, 100} {
				if got, want := s.percentile(p), stats.Percentile(all, p); got != want {
					t.Errorf("p%g = %g, want %g", p, got, want)
				}
			}
			vals, counts := s.distinct()
			total := 0
			for i, c := range counts {
				total += int(c)
				if i > 0 && !(vals[i-1] < vals[i]) {
					t.Fatalf("distinct values not ascending: %g then %g", vals[i-1], vals[i])
				}
			}
			if total != tt.n || s.len() != tt.n {
				t.Errorf("%d counted, len %d, want %d", total, s.len(), tt.n)
			}
		})
	}
}
