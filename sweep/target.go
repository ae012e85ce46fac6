package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Target is what a threshold search holds a run to: METRIC <= X or
// METRIC >= X, METRIC a metric reference (missed_precommits_rate(hsm),
// block_interval_p95_ms, sign_latency_p99_ms(v,precommit)).
type Target struct {
	Metric string  // the metric reference, as MetricValues names it
	Op     string  // "<=" or ">="
	Bound  float64 // X
}

// Target operators.
const (
	AtMost  = "<="
	AtLeast = ">="
)

// ParseTarget reads --target's syntax; the metric reference is checked
// against the scenario's plan separately.
func ParseTarget(s string) (Target, error) {
	bad := func(why string) (Target, error) {
		return Target{}, fmt.Errorf("--target %q: %s; want METRIC <= X or METRIC >= X, e.g. 'missed_precommits_rate(hsm) <= 0.05'", s, why)
	}
	op := ""
	i := -1
	for _, o := range []string{AtMost, AtLeast} {
		if j := strings.Index(s, o); j >= 0 {
			if op != "" {
				return bad("two comparisons")
			}
			op, i = o, j
		}
	}
	if op == "" {
		for _, o := range []string{"<", ">", "==", "="} {
			if strings.Contains(s, o) {
				return bad(fmt.Sprintf("%q is not a comparison a target may use (only <= and >=)", o))
			}
		}
		return bad("no comparison")
	}
	metric := strings.TrimSpace(s[:i])
	rest := strings.TrimSpace(s[i+len(op):])
	if metric == "" {
		return bad("no metric before " + op)
	}
	if rest == "" {
		return bad("no value after " + op)
	}
	x, err := strconv.ParseFloat(rest, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return bad(fmt.Sprintf("%q is not a number", rest))
	}
	return Target{Metric: metric, Op: op, Bound: x}, nil
}

func (t Target) String() string {
	return t.Metric + " " + t.Op + " " + strconv.FormatFloat(t.Bound, 'g', -1, 64)
}

// Holds judges one run's value of the target's metric.
func (t Target) Holds(v float64) bool {
	if t.Op == AtLeast {
		return v >= t.Bound
	}
	return v <= t.Bound
}
