package sweep

import (
	"reflect"
	"testing"

	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/scenarios"
)

// Numeric values given out of order are drawn in x order, each x with its
// own mean, min and max.
func TestLineSeriesSortedByX(t *testing.T) {
	values := []string{"1s", "100ms", "500ms"}
	s := &Sweep{Config: Config{Axes: []Axis{{Path: "chain.timeouts.commit", Values: values}}}, Labels: []string{"commit"}}
	o := &Outcome{}
	for i, v := range values {
		m := float64(10 * (i + 1)) // 1s: 10, 100ms: 20, 500ms: 30
		o.Points = append(o.Points, PointResult{
			Point: Point{Set: []scenarios.Setting{{Path: "chain.timeouts.commit", Value: v}}},
			Runs:  []RunRecord{{Repeat: 1, Result: Result{StopReason: eventlog.StopHeights, Metrics: map[string]float64{"m": m}}}},
		})
	}
	series, _, labels := s.lineSeries(o, "m")
	if labels != nil || len(series) != 1 {
		t.Fatalf("labels %v, %d series", labels, len(series))
	}
	sr := series[0]
	if !reflect.DeepEqual(sr.X, []float64{100, 500, 1000}) || !reflect.DeepEqual(sr.Mean, []float64{20, 30, 10}) ||
		!reflect.DeepEqual(sr.Min, sr.Mean) || !reflect.DeepEqual(sr.Max, sr.Mean) {
		t.Errorf("series x %v mean %v min %v max %v; want x ascending with its values", sr.X, sr.Mean, sr.Min, sr.Max)
	}
}
