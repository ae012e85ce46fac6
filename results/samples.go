package results

import (
	"cmp"
	"slices"

	"github.com/valnet/valnet/internal/stats"
)

// samples is a multiset of float64 values kept exactly, for percentiles
// over a whole run without a slice of every sample: values are buffered
// and folded, a buffer at a time, into their distinct values (sorted) with
// a count each. A run whose samples repeat (a fixed latency, a model's
// timings) costs a few entries however long it is; one whose samples are
// all distinct costs 12 bytes a sample. Every statistic is the one the
// sorted slice of all samples gives (nearest rank, internal/stats).
//
// Values are ordered as slices.Sort orders float64s (cmp.Compare: NaN
// first); values that compare equal (-0 and +0, NaNs) share an entry.
type samples struct {
	buf    []float64 // not yet folded
	vals   []float64 // distinct, ascending
	counts []uint32  // of each of vals
	n      int       // all samples, buf included
}

// samplesBuffer is how many values are buffered before a fold; a fold
// costs one pass over the distinct values, so the buffer grows with them.
const samplesBuffer = 256

func (s *samples) add(v float64) {
	s.buf = append(s.buf, v)
	s.n++
	if len(s.buf) >= max(samplesBuffer, len(s.vals)/4) {
		s.fold()
	}
}

// fold merges the buffer into vals and counts.
func (s *samples) fold() {
	if len(s.buf) == 0 {
		return
	}
	slices.SortFunc(s.buf, cmp.Compare[float64])
	vals := make([]float64, 0, len(s.vals)+len(s.buf))
	counts := make([]uint32, 0, cap(vals))
	push := func(v float64, c uint32) {
		if k := len(vals) - 1; k >= 0 && cmp.Compare(vals[k], v) == 0 {
			counts[k] += c
			return
		}
		vals, counts = append(vals, v), append(counts, c)
	}
	i, j := 0, 0
	for i < len(s.vals) || j < len(s.buf) {
		if j == len(s.buf) || i < len(s.vals) && cmp.Compare(s.vals[i], s.buf[j]) <= 0 {
			push(s.vals[i], s.counts[i])
			i++
		} else {
			push(s.buf[j], 1)
			j++
		}
	}
	s.vals, s.counts, s.buf = slices.Clip(vals), slices.Clip(counts), s.buf[:0]
}

// len is the number of samples.
func (s *samples) len() int { return s.n }

// distinct folds the buffer and returns the distinct values, ascending,
// and their counts (shared with s: read only).
func (s *samples) distinct() ([]float64, []uint32) {
	s.fold()
	return s.vals, s.counts
}

// percentile is stats.Percentile of the sorted samples.
func (s *samples) percentile(p float64) float64 {
	if s.n == 0 {
		return 0
	}
	vals, counts := s.distinct()
	rank := stats.Rank(s.n, p)
	seen := 0
	for i, c := range counts {
		if seen += int(c); seen >= rank {
			return vals[i]
		}
	}
	return vals[len(vals)-1]
}

// stats is latencyStats of the samples.
func (s *samples) stats() LatencyStats {
	return LatencyStats{
		Count: s.n,
		P50:   roundMS(s.percentile(50)),
		P95:   roundMS(s.percentile(95)),
		P99:   roundMS(s.percentile(99)),
		Max:   roundMS(s.percentile(100)),
	}
}
