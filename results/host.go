package results

import (
	"fmt"
	"math"

	"github.com/valnet/valnet/results/eventlog"
)

// The host verdict (docs/results.md, "Host overload", gives the reasons
// and the calibration). Each second the runner measures is judged alone
// (Saturated, Stalled); the run is judged on all of them (JudgeHost).
const (
	// A busy second: nearly every core of the machine busy while the
	// runner's goroutines wait to be scheduled or its ticker runs late.
	// Scheduling lag alone is no sign: thousands of goroutines woken at
	// once reach 100 ms on half-idle cores.
	busyCPU      = 0.95 // share of all cores busy
	busySchedLag = 20.0 // ms, p99 of Go's scheduling latency over the second
	busyTickLag  = 50.0 // ms, worst lateness of the runner's 10 ms ticker
	// A late second: the ticker a quarter of a second late (a quarter of
	// CometBFT's 1 s vote timeouts, and more than any built-in shows on an
	// idle host) while most cores are busy. Runtimes do not turn every
	// core to account (lock contention, GC), so a host drowning in
	// goroutines can read 85-94 % busy with a ticker most of a second late.
	lateCPU     = 0.85
	lateTickLag = 250.0 // ms
	// A stall: the ticker a whole second late, whatever the CPU. Nothing
	// in the runner ran for a second (CPU starvation of this process, a
	// cgroup quota, swapping, a GC pause): every in-process node's timers
	// and every event's timestamp were held up as long, longer than a vote
	// timeout, so no timing of the run can be trusted.
	stallTickLag = 1000.0 // ms
	// overloadedShare: a run is overloaded when at least this share of its
	// seconds were saturated, or when any second stalled.
	overloadedShare = 0.10
)

// OverloadedNotice is the one line the table and report print on top when
// the host was overloaded.
const OverloadedNotice = "host overloaded: results reflect this machine, not the network"

// Stalled reports whether the runner stalled during one second of the
// host: its ticker was at least stallTickLag late.
func Stalled(s eventlog.HostSample) bool { return s.TickLagMS >= stallTickLag }

// Saturated reports whether one second of the host was saturated: busy,
// late or stalled (see the constants).
func Saturated(s eventlog.HostSample) bool {
	busy := s.CPUBusy >= busyCPU && (s.SchedLagP99MS >= busySchedLag || s.TickLagMS >= busyTickLag)
	late := s.CPUBusy >= lateCPU && s.TickLagMS >= lateTickLag
	return busy || late || Stalled(s)
}

// HostVerdict is how a run's host seconds are judged.
type HostVerdict struct {
	Saturated, Stalled int // seconds (a stalled second is saturated too)
	Overloaded         bool
	// Why says what made the run overloaded; empty when it was not.
	Why string
}

// JudgeHost judges a run's host samples, one a second in order: the run
// is overloaded when any second stalled (its timing cannot be trusted) or
// when at least overloadedShare of its seconds were saturated.
func JudgeHost(samples []eventlog.HostSample) HostVerdict {
	var v HostVerdict
	var worstStall float64
	for _, s := range samples {
		if Saturated(s) {
			v.Saturated++
		}
		if Stalled(s) {
			v.Stalled++
			worstStall = math.Max(worstStall, s.TickLagMS)
		}
	}
	n := len(samples)
	share := n > 0 && float64(v.Saturated) >= overloadedShare*float64(n)
	switch {
	case v.Stalled > 0:
		v.Why = fmt.Sprintf("the runner stalled for up to %s ms in %d of %d s (a stall is %s ms)",
			formatMS(worstStall), v.Stalled, n, formatMS(stallTickLag))
		if share {
			v.Why += fmt.Sprintf("; %d of %d s saturated", v.Saturated, n)
		}
	case share:
		v.Why = fmt.Sprintf("%d of %d s saturated (overloaded from %s %%)", v.Saturated, n, formatMS(100*overloadedShare))
	}
	v.Overloaded = v.Why != ""
	return v
}

// HostSummary is summary.json's host: the machine the run ran on.
type HostSummary struct {
	Cores         int     `json:"cores"`
	Samples       int     `json:"samples"` // seconds measured
	CPUBusyP95    float64 `json:"cpu_busy_p95"`
	SchedLagP99MS float64 `json:"sched_lag_p99_ms"` // p99 over the run's seconds of each second's p99
	TickLagMaxMS  float64 `json:"tick_lag_max_ms"`
	RSSMaxMB      float64 `json:"rss_max_mb"`
	// SaturatedSeconds is how many seconds were saturated, StalledSeconds
	// how many of them stalled, and Overloaded whether that was enough
	// (≥ 10 % of the run saturated, or any stall) to say so on top;
	// OverloadedWhy says which.
	SaturatedSeconds int    `json:"saturated_seconds"`
	StalledSeconds   int    `json:"stalled_seconds"`
	Overloaded       bool   `json:"overloaded"`
	OverloadedWhy    string `json:"overloaded_why,omitempty"`
}

// hostAgg streams host samples into a HostSummary.
type hostAgg struct {
	cores        int
	busy, lag    samples
	tickMax, rss float64
	seconds      []eventlog.HostSample // for JudgeHost
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
	a.seconds = append(a.seconds, *s)
}

// result is nil when the run measured no host (an older stream).
func (a *hostAgg) result() *HostSummary {
	n := a.busy.len()
	if n == 0 {
		return nil
	}
	v := JudgeHost(a.seconds)
	return &HostSummary{Cores: a.cores, Samples: n,
		CPUBusyP95: a.busy.percentile(95), SchedLagP99MS: a.lag.percentile(99),
		TickLagMaxMS: a.tickMax, RSSMaxMB: a.rss,
		SaturatedSeconds: v.Saturated, StalledSeconds: v.Stalled,
		Overloaded: v.Overloaded, OverloadedWhy: v.Why}
}
