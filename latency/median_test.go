package latency

import (
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		spec Spec
		want time.Duration
	}{
		{Spec{Dist: Fixed, Value: 200 * ms}, 200 * ms},
		{Spec{Dist: Uniform, Min: 100 * ms, Max: 300 * ms}, 200 * ms},
		{Spec{Dist: Normal, Mean: 150 * ms, Stddev: 10 * ms}, 150 * ms},
		{Spec{Dist: Lognormal, P50: 120 * ms, P99: 900 * ms}, 120 * ms},
		{Spec{}, 0},
	}
	for _, tt := range tests {
		if got := tt.spec.Median(); got != tt.want {
			t.Errorf("%v.Median() = %v, want %v", tt.spec, got, tt.want)
		}
	}
}

// TestTypical: a model's Typical delay is its spec's median, whether New
// or Constant made it; a model that does not know its median has none.
func TestTypical(t *testing.T) {
	ms := time.Millisecond
	for _, spec := range []Spec{
		{Dist: Fixed, Value: 200 * ms},
		{Dist: Uniform, Min: 100 * ms, Max: 300 * ms},
		{Dist: Normal, Mean: 150 * ms, Stddev: 10 * ms},
		{Dist: Lognormal, P50: 120 * ms, P99: 900 * ms},
	} {
		m, err := New(spec, 1, "typical")
		if err != nil {
			t.Fatal(err)
		}
		if got := Typical(m); got != spec.Median() {
			t.Errorf("Typical(New(%v)) = %v, want %v", spec, got, spec.Median())
		}
	}
	if got := Typical(Constant(70 * ms)); got != 70*ms {
		t.Errorf("Typical(Constant(70ms)) = %v", got)
	}
	if got := Typical(noMedian{}); got != 0 {
		t.Errorf("Typical of a model without Median = %v, want 0", got)
	}
}

type noMedian struct{}

func (noMedian) Draw() time.Duration { return time.Second }
func (noMedian) String() string      { return "no median" }
