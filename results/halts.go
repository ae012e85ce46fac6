package results

import "time"

// Halt is a stretch with no commit longer than the halt threshold: from
// the last block before it (FromHeight) to the next commit, or to the end
// of the run when the chain never resumed (Resumed false).
type Halt struct {
	FromHeight int64 `json:"from_height"`
	DurationMS int64 `json:"duration_ms"`
	Resumed    bool  `json:"resumed"`
}

// haltMedianFactor: without an explicit run.halt_after, a gap is a halt
// only if it is also longer than this many median block intervals, so
// that a chain that is merely slow (blocks slower than its timeouts
// suggest) is not reported as halted.
const haltMedianFactor = 5

// haltThreshold is the longest stretch without a commit that is not a
// halt. An explicit run.halt_after (run_start's halt_after_ms with
// halt_after_explicit) is used as it is. Otherwise it is the larger of the
// runner's default from the timeouts (halt_after_ms: round 0 and round 1
// with every timeout firing, plus timeout_commit; 12.5 s at CometBFT's
// defaults, see haltAfter in runner/run.go) and haltMedianFactor × the
// median block interval p50ms. 0: no threshold can be set (no run_start
// value and no interval), so no halts.
func haltThreshold(start *Event, p50ms float64) time.Duration {
	var floor time.Duration
	if start != nil {
		floor = time.Duration(start.HaltAfterMS) * time.Millisecond
		if start.HaltAfterExplicit && floor > 0 {
			return floor
		}
	}
	return max(floor, time.Duration(haltMedianFactor*p50ms*float64(time.Millisecond)))
}

// findHalts lists the gaps between consecutive observed commits (and from
// the last commit to the end of the run) longer than haltAfter; haltAfter
// 0 finds none.
func findHalts(c *chain, haltAfter time.Duration, end time.Time) []Halt {
	if haltAfter <= 0 {
		return nil
	}
	var halts []Halt
	for i := 1; i < len(c.heights); i++ {
		prev, cur := c.blocks[c.heights[i-1]], c.blocks[c.heights[i]]
		if gap := cur.Time.Sub(prev.Time); gap > haltAfter {
			halts = append(halts, Halt{FromHeight: prev.Height, DurationMS: gap.Milliseconds(), Resumed: true})
		}
	}
	if n := len(c.heights); n > 0 && !end.IsZero() {
		last := c.blocks[c.heights[n-1]]
		if gap := end.Sub(last.Time); gap > haltAfter {
			halts = append(halts, Halt{FromHeight: last.Height, DurationMS: gap.Milliseconds()})
		}
	}
	return halts
}
