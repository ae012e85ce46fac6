package results

import (
	"github.com/valnet/valnet/results/eventlog"
	"time"
)

// Halt is a stretch with no commit longer than the halt threshold: from
// the last block before it (FromHeight; 0: from the start of the network,
// nothing committed before it) to the next commit, or to the end of the
// run when the chain never resumed (Resumed false).
type Halt struct {
	FromHeight int64 `json:"from_height"`
	DurationMS int64 `json:"duration_ms"`
	Resumed    bool  `json:"resumed"`
	// Height is the height that could not commit and Round the highest
	// round any node had entered there when the stretch became a halt.
	Height int64 `json:"height"`
	Round  int32 `json:"round"`
	// Cause (one of HaltCauses) and Detail, its evidence from the events
	// (see explainHalt).
	Cause  string `json:"cause"`
	Detail string `json:"detail"`
	// needsVotes: the cause is unknown because telling it needed vote
	// events the run did not record (a model run with vote_events false).
	needsVotes bool
}

// haltSpan is a halt as findHalts finds it: Halt's first three fields and
// its bounds in time.
type haltSpan struct {
	Halt
	from, to time.Time
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
// defaults, see Plan.HaltAfter in scenarios/halt.go) and haltMedianFactor × the
// median block interval p50ms. 0: no threshold can be set (no run_start
// value and no interval), so no halts.
func haltThreshold(start *eventlog.Event, p50ms float64) time.Duration {
	var floor time.Duration
	if start != nil {
		floor = time.Duration(start.HaltAfterMS) * time.Millisecond
		if start.HaltAfterExplicit && floor > 0 {
			return floor
		}
	}
	return max(floor, time.Duration(haltMedianFactor*p50ms*float64(time.Millisecond)))
}

// findHalts lists, once the chain is done, the stretches without a commit longer than haltAfter:
// from netStart (the network up) to the first commit, or to the end when
// nothing committed at all; between consecutive observed commits; and from
// the last commit to the end of the run. haltAfter 0 finds none.
func findHalts(c *chain, haltAfter time.Duration, netStart, end time.Time) []haltSpan {
	if haltAfter <= 0 {
		return nil
	}
	var halts []haltSpan
	add := func(from, to time.Time, fromHeight int64, resumed bool) {
		if to.Sub(from) > haltAfter {
			halts = append(halts, haltSpan{Halt: Halt{FromHeight: fromHeight, DurationMS: to.Sub(from).Milliseconds(), Resumed: resumed}, from: from, to: to})
		}
	}
	if !netStart.IsZero() {
		switch {
		case len(c.heights) > 0:
			add(netStart, c.rows[0].t.time(), 0, true)
		case !end.IsZero():
			add(netStart, end, 0, false)
		}
	}
	for i := 1; i < len(c.rows); i++ {
		prev, cur := &c.rows[i-1], &c.rows[i]
		add(prev.t.time(), cur.t.time(), prev.height, true)
	}
	if n := len(c.rows); n > 0 && !end.IsZero() {
		last := &c.rows[n-1]
		add(last.t.time(), end, last.height, false)
	}
	return halts
}
