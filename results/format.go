package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Text shared by the reports of a summary (table, summary.md, junit.xml,
// report.html): one wording of each number, whichever report shows it.

// heightsText: "8 (1..8), target 8".
func heightsText(h HeightStats) string {
	return strconv.Itoa(h.Committed) + heightRange(h)
}

// heightRange: " (1..8), target 8", the committed range and the target
// when known.
func heightRange(h HeightStats) string {
	var out string
	if h.Committed > 0 {
		out += fmt.Sprintf(" (%d..%d)", h.First, h.Last)
	}
	if h.Target > 0 {
		out += fmt.Sprintf(", target %d", h.Target)
	}
	return out
}

// roundsText: heights with a round change, the max commit round and the
// extra rounds, and how many heights' commit round is unknown.
func roundsText(r RoundStats) string {
	out := fmt.Sprintf("%d (max commit round %d, extra rounds %d)", r.HeightsWithRoundChange, r.MaxCommitRound, r.ExtraRounds)
	if r.UnknownCommitRound > 0 {
		out += fmt.Sprintf(", commit round unknown for %d", r.UnknownCommitRound)
	}
	return out
}

// intervalText: the block interval's p50, p95 and max, or "-" without one.
func intervalText(bi IntervalStats) string {
	if bi.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("p50 %s ms, p95 %s ms, max %s ms (%d intervals)", formatMS(bi.P50), formatMS(bi.P95), formatMS(bi.Max), bi.Count)
}

// expectationValue: the measured value with its note, or the error that
// kept it from being measured.
func expectationValue(e ExpectationResult) string {
	switch {
	case e.Error != "":
		return "error: " + e.Error
	case e.Note != "":
		return formatMS(e.Value) + " (" + e.Note + ")"
	}
	return formatMS(e.Value)
}

// p50p99 formats a latency cell; "-" when the phase was never signed, so
// "no data" is not confused with 0 ms.
func p50p99(st LatencyStats) string {
	if st.Count == 0 {
		return "-"
	}
	return formatLatency(st.P50) + "/" + formatLatency(st.P99)
}

// formatLatency keeps about three significant digits: local signing is
// sub-millisecond, injected latency is hundreds of ms.
func formatLatency(ms float64) string {
	switch {
	case ms >= 100:
		return strconv.FormatFloat(ms, 'f', 0, 64)
	case ms >= 10:
		return strconv.FormatFloat(ms, 'f', 1, 64)
	default:
		return strconv.FormatFloat(ms, 'f', 2, 64)
	}
}

func formatBounds(lo, hi *float64) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("in [%s, %s]", formatMS(*lo), formatMS(*hi))
	case lo != nil:
		return ">= " + formatMS(*lo)
	case hi != nil:
		return "<= " + formatMS(*hi)
	}
	return "(no bound)"
}

func formatBlockIDs(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		switch {
		case id == "":
			out[i] = "nil"
		case len(id) > 12:
			out[i] = id[:12] + "…"
		default:
			out[i] = id
		}
	}
	return strings.Join(out, " vs ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// haltText describes a halt in one line, for the table and the HTML
// report: where, how long, and why.
func haltText(hl Halt) string {
	out := haltWhere(hl)
	if hl.Resumed {
		out += ", then resumed"
	} else {
		out += ", until the end of the run"
	}
	if hl.Cause != "" {
		out += "; cause " + hl.Cause + ": " + hl.Detail
	}
	return out
}

// haltWhere: "no commit after height 4 for 12.5s", or "no height
// committed for 2m0s after the network started".
func haltWhere(hl Halt) string {
	d := (time.Duration(hl.DurationMS) * time.Millisecond).String()
	if hl.FromHeight == 0 {
		return "no height committed for " + d + " after the network started"
	}
	return fmt.Sprintf("no commit after height %d for %s", hl.FromHeight, d)
}

// ExpectationName names an expectation result the way junit.xml and
// summary.md show it: metric[validator,phase] and its bounds, e.g.
// "missed_precommits[slow] <= 5" or "heights_committed >= 20".
func ExpectationName(e ExpectationResult) string {
	return expectationSubject(e) + " " + formatBounds(e.Min, e.Max)
}

// defaultEvery marks the one line that stands for a default expectation
// that held for every validator (shownExpectations).
const defaultEvery = "every validator"

// shownExpectations is what the reports list: the results of summary.json,
// with valnet's default expectation (Expectation.Default) one line when
// it held for every validator, and only its failures otherwise.
func shownExpectations(rs []ExpectationResult) []ExpectationResult {
	var out []ExpectationResult
	folded := map[string]int{} // metric -> index in out of its one line
	for _, e := range rs {
		if !e.Default || !e.OK || e.Warning != "" || e.Error != "" {
			out = append(out, e)
			continue
		}
		if i, ok := folded[e.Metric]; ok {
			out[i].Value = max(out[i].Value, e.Value)
			continue
		}
		e.Validator = defaultEvery
		folded[e.Metric] = len(out)
		out = append(out, e)
	}
	return out
}

func expectationSubject(e ExpectationResult) string {
	if e.Validator == defaultEvery {
		return e.Metric + " (valnet's default, every validator)"
	}
	var sub []string
	if e.Validator != "" {
		sub = append(sub, e.Validator)
	}
	if e.Phase != "" {
		sub = append(sub, e.Phase)
	}
	if len(sub) == 0 {
		return e.Metric
	}
	return e.Metric + "[" + strings.Join(sub, ",") + "]"
}

// hostText: "2 cores, CPU busy p95 95 %, scheduling lag p99 1.6 ms, runner
// RSS max 71 MB, 0 of 27 s saturated".
func hostText(h *HostSummary) string {
	return fmt.Sprintf("%d cores, CPU busy p95 %s %%, scheduling lag p99 %s ms, runner RSS max %s MB, %d of %d s saturated",
		h.Cores, formatMS(roundTo(100*h.CPUBusyP95, 1)), formatMS(h.SchedLagP99MS), formatMS(roundTo(h.RSSMaxMB, 0)), h.SaturatedSeconds, h.Samples)
}

// overloaded: the run's host was saturated often enough to say so on top.
func overloaded(s *Summary) bool { return s.Host != nil && s.Host.Overloaded }

// overloadedLine is the notice on top of every report of an overloaded
// run, with what made it so.
func overloadedLine(s *Summary) string {
	if s.Host != nil && s.Host.OverloadedWhy != "" {
		return OverloadedNotice + " (" + s.Host.OverloadedWhy + ")"
	}
	return OverloadedNotice
}

func roundTo(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// nodesText names the stock binaries that ran the nodes, with how many
// ran each ("cometbft 0.38.26 (v0.38) x4"), "" when valnet's own ran
// every one; valnet's own are counted too when some did.
func nodesText(s *Summary) string {
	count := map[string]int{}
	var order []string
	stock := false
	for _, v := range s.Validators {
		n := v.Node
		if n == "" {
			n = "valnet node"
		} else {
			stock = true
		}
		if count[n] == 0 {
			order = append(order, n)
		}
		count[n]++
	}
	if !stock {
		return ""
	}
	parts := make([]string, len(order))
	for i, n := range order {
		parts[i] = fmt.Sprintf("%s x%d", n, count[n])
	}
	return strings.Join(parts, ", ")
}
