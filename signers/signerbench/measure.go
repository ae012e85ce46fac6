package signerbench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// samples are the timed ops of one row.
type samples struct {
	d      []time.Duration
	capped bool // stopped by Duration before Iterations
}

// measure warms op up, then times it Iterations times or until Duration is
// spent. time.Now carries Go's monotonic clock reading and time.Since uses
// it, so wall-clock steps do not bend the samples. op gets a sequence
// number that never repeats within a row, warm-up included (a backend
// signs height seq+1 so the guard persists every signature). An op error
// stops the row.
func measure(ctx context.Context, o Options, op func(seq int) error) (samples, error) {
	seq := 0
	warmStart := time.Now()
	for w := 0; w < o.Warmup; w++ {
		if err := ctx.Err(); err != nil {
			return samples{}, err
		}
		if err := op(seq); err != nil {
			return samples{}, fmt.Errorf("warm-up: %w", err)
		}
		seq++
		if o.Duration > 0 && time.Since(warmStart) >= o.Duration/10 {
			break
		}
	}
	s := samples{d: make([]time.Duration, 0, o.Iterations)}
	start := time.Now()
	for len(s.d) < o.Iterations {
		if err := ctx.Err(); err != nil {
			return samples{}, err
		}
		if o.Duration > 0 && len(s.d) >= minSamples && time.Since(start) >= o.Duration {
			s.capped = true
			break
		}
		t0 := time.Now()
		err := op(seq)
		d := time.Since(t0)
		if err != nil {
			return samples{}, fmt.Errorf("op %d: %w", len(s.d)+1, err)
		}
		s.d = append(s.d, d)
		seq++
	}
	return s, nil
}

// row turns samples into a table row.
func (s samples) row(group, name, op, note string) Row {
	if s.capped {
		note = joinNote(note, "capped by --duration")
	}
	sorted := slices.Clone(s.d)
	slices.Sort(sorted)
	var total time.Duration
	for _, d := range sorted {
		total += d
	}
	r := Row{Group: group, Name: name, Op: op, N: len(sorted), Note: note,
		P50US: us(percentile(sorted, 0.50)), P99US: us(percentile(sorted, 0.99))}
	if total > 0 {
		r.OpsPerS = round(float64(len(sorted))/total.Seconds(), 1)
	}
	return r
}

// percentile is the nearest-rank percentile of sorted: the smallest sample
// with at least p of the samples at or below it. With few samples p99 is
// the maximum, which is the honest answer.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// us is d in microseconds, to the nanosecond.
func us(d time.Duration) float64 { return round(float64(d)/float64(time.Microsecond), 3) }

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func failedRow(group, name, op string, err error) Row {
	return Row{Group: group, Name: name, Op: op, Note: FailedPrefix + err.Error()}
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
