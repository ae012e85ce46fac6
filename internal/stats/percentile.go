// Package stats holds the one percentile rule every valnet summary uses.
package stats

import (
	"cmp"
	"math"
)

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted: the smallest value such that at least p% of the values are <= it.
// Nearest rank always returns an observed value, so a p99 over a handful of
// signatures is a latency that really happened, not an interpolation. An
// empty slice yields the zero value.
func Percentile[T cmp.Ordered](sorted []T, p float64) T {
	var zero T
	n := len(sorted)
	if n == 0 {
		return zero
	}
	return sorted[Rank(n, p)-1]
}

// Rank is the 1-based rank, among n > 0 sorted values, of the nearest-rank
// p-th percentile that Percentile returns: for a summary that keeps its
// values counted rather than listed.
func Rank(n int, p float64) int {
	// p*n/100 rather than p/100*n: 95/100 is inexact in binary and
	// 0.95*20 would round up to rank 20 instead of 19.
	rank := int(math.Ceil(p * float64(n) / 100))
	return min(max(rank, 1), n)
}
