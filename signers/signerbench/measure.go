package signerbench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/valnet/valnet/internal/stats"
)

// samples are the timed ops of one row.
type samples struct {
	d      []time.Duration
	seq    []int // the op's seq of each sample
	capped bool  // stopped by Duration before Iterations
	err    error // the op failed; d is then meaningless
}

// op is one operation to time; seq never repeats within a row, warm-up
// included (a backend signs height seq+1, so the guard persists every
// signature).
type op func(seq int) error

// measure warms op up, then times it Iterations times or until Duration is
// spent. The real clock's Now carries Go's monotonic clock reading and
// Since uses it, so wall-clock steps do not bend the samples. Only a cancelled ctx is
// returned as an error; a failing op is in samples.err.
func measure(ctx context.Context, o Options, f op) (samples, error) {
	s, err := measureInterleaved(ctx, o, []op{f})
	if err != nil {
		return samples{}, err
	}
	return s[0], s[0].err
}

// measureInterleaved times several ops together, one of each per
// iteration in a fresh random order (a fixed order gives each op the same
// predecessor, whose leftovers, a journal commit or a parked goroutine, it
// would then always pay for). Rows read side by side (local, keyfile-once,
// remote) then see the same disk, cache and scheduler weather, which
// sequential rows would not: fsync time drifts between rows by more than a
// transport costs. A failing op leaves the rotation; the others go on. The
// time cap is Duration per op.
func measureInterleaved(ctx context.Context, o Options, ops []op) ([]samples, error) {
	clock := o.clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	k := len(ops)
	out := make([]samples, k)
	seq := make([]int, k)
	run := func(i int) (time.Duration, bool) {
		if out[i].err != nil {
			return 0, false
		}
		t0 := clock.Now()
		err := ops[i](seq[i])
		d := clock.Since(t0)
		seq[i]++
		if err != nil {
			out[i].err = fmt.Errorf("op %d: %w", seq[i], err)
			return 0, false
		}
		return d, true
	}
	warmStart := clock.Now()
	for w := 0; w < o.Warmup; w++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i := range ops {
			run(i)
		}
		if o.Duration > 0 && clock.Since(warmStart) >= time.Duration(k)*o.Duration/10 {
			break
		}
	}
	for i := range out {
		out[i].d = make([]time.Duration, 0, o.Iterations)
	}
	start := clock.Now()
	for it := 0; it < o.Iterations; it++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if o.Duration > 0 && it >= minSamples && clock.Since(start) >= time.Duration(k)*o.Duration {
			for i := range out {
				out[i].capped = true
			}
			break
		}
		for _, i := range rand.Perm(k) {
			if d, ok := run(i); ok {
				out[i].d = append(out[i].d, d)
				out[i].seq = append(out[i].seq, seq[i]-1)
			}
		}
	}
	return out, nil
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
		P50US: us(stats.Percentile(sorted, 50)), P99US: us(stats.Percentile(sorted, 99))}
	if total > 0 {
		r.OpsPerS = round(float64(len(sorted))/total.Seconds(), 1)
	}
	return r
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
