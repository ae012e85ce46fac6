package results

import (
	"github.com/valnet/valnet/results/eventlog"
	"math"
)

// Saturation thresholds, calibrated on a 2-core machine (docs/results.md,
// "Host overload"): every built-in scenario stays below them (sparse-50,
// the largest, had at most 1 saturated second of 21), and 50 validators in
// a full mesh exceed them (9 of 12 seconds; 100 in a mesh: 198 of 213).
// 100 validators on a ring do not, on an otherwise idle host: CPU p95
// 0.83, scheduling lag p99 10 ms; their slower blocks come from the ring's
// gossip depth, not from the host. A second is saturated when nearly
// every core is busy and the runner's goroutines wait to be scheduled.
// Scheduling lag alone is no sign: with thousands of goroutines woken at
// once its p99 reaches 100 ms on half-idle cores.
const (
	saturatedCPUBusy  = 0.95 // share of all cores busy
	saturatedSchedLag = 20.0 // ms, p99 of Go's scheduling latency over the second
	saturatedTickLag  = 50.0 // ms, worst lateness of the runner's 10 ms ticker
	// overloadedShare: a run is overloaded when at least this share of its
	// seconds were saturated.
	overloadedShare = 0.10
)

// OverloadedNotice is the one line the table and report print on top when
// the host was overloaded.
const OverloadedNotice = "host overloaded: results reflect this machine, not the network"

// Saturated reports whether one second of the host was saturated.
func Saturated(s eventlog.HostSample) bool {
	return s.CPUBusy >= saturatedCPUBusy && (s.SchedLagP99MS >= saturatedSchedLag || s.TickLagMS >= saturatedTickLag)
}

// HostSummary is summary.json's host: the machine the run ran on.
type HostSummary struct {
	Cores         int     `json:"cores"`
	Samples       int     `json:"samples"` // seconds measured
	CPUBusyP95    float64 `json:"cpu_busy_p95"`
	SchedLagP99MS float64 `json:"sched_lag_p99_ms"` // p99 over the run's seconds of each second's p99
	TickLagMaxMS  float64 `json:"tick_lag_max_ms"`
	RSSMaxMB      float64 `json:"rss_max_mb"`
	// SaturatedSeconds is how many seconds were saturated, and Overloaded
	// whether they were enough (≥ 10 % of the run) to say so on top.
	SaturatedSeconds int  `json:"saturated_seconds"`
	Overloaded       bool `json:"overloaded"`
}

// hostAgg streams host samples into a HostSummary.
type hostAgg struct {
	cores        int
	busy, lag    samples
	tickMax, rss float64
	saturated    int
}

func (a *hostAgg) add(s *eventlog.HostSample) {
	if s == nil {
		return
	}
	a.cores = s.Cores
	a.busy.add(s.CPUBusy)
	a.lag.add(s.SchedLagP99MS)
	a.tickMax = math.Max(a.tickMax, s.TickLagMS)
	a.rss = math.Max(a.rss, s.RSSMB)
	if Saturated(*s) {
		a.saturated++
	}
}

// result is nil when the run measured no host (an older stream).
func (a *hostAgg) result() *HostSummary {
	n := a.busy.len()
	if n == 0 {
		return nil
	}
	return &HostSummary{Cores: a.cores, Samples: n,
		CPUBusyP95: a.busy.percentile(95), SchedLagP99MS: a.lag.percentile(99),
		TickLagMaxMS: a.tickMax, RSSMaxMB: a.rss, SaturatedSeconds: a.saturated,
		Overloaded: float64(a.saturated) >= overloadedShare*float64(n)}
}
