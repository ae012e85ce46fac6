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

// defaultHaltFactor: without a scenario halt_after, a gap longer than this
// many times the run's median block interval is a halt.
const defaultHaltFactor = 3

// findHalts lists the gaps between consecutive observed commits (and from
// the last commit to the end of the run) longer than haltAfter; haltAfter
// 0 means 3 × the median block interval (p50ms).
func findHalts(c *chain, haltAfter time.Duration, p50ms float64, end time.Time) []Halt {
	if haltAfter <= 0 {
		if p50ms <= 0 {
			return nil
		}
		haltAfter = time.Duration(defaultHaltFactor * p50ms * float64(time.Millisecond))
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
