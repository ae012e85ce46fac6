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
