package results

import "slices"

// chain indexes what the stream says about committed heights. It is the one
// place that defines "committed", "commit round" and "block interval", which
// summary.json and heights.csv must agree on.
type chain struct {
	blocks     map[int64]*Event // height -> its block event (first one seen)
	heights    []int64          // committed heights, ascending
	stepCommit map[int64]int32  // height -> lowest round of a step "commit"
	target     int64            // run_start's heights; 0: none
}

func newChain(events []Event) *chain {
	c := &chain{blocks: map[int64]*Event{}, stepCommit: map[int64]int32{}}
	for i := range events {
		ev := &events[i]
		switch ev.Kind {
		case KindRunStart:
			if c.target == 0 {
				c.target = ev.Heights
			}
		case KindBlock:
			// Only the first committing node should report a block; if a
			// height is reported twice the first report wins, since its time
			// is the one closest to the actual commit.
			if _, ok := c.blocks[ev.Height]; !ok {
				c.blocks[ev.Height] = ev
				c.heights = append(c.heights, ev.Height)
			}
		case KindStep:
			if ev.Step == "commit" {
				if r, ok := c.stepCommit[ev.Height]; !ok || ev.Round < r {
					c.stepCommit[ev.Height] = ev.Round
				}
			}
		}
	}
	slices.Sort(c.heights)
	return c
}

// first and last committed heights; 0 when nothing was committed.
func (c *chain) first() int64 {
	if len(c.heights) == 0 {
		return 0
	}
	return c.heights[0]
}

func (c *chain) last() int64 {
	if len(c.heights) == 0 {
		return 0
	}
	return c.heights[len(c.heights)-1]
}

// next returns the block of height h+1, whose LastCommit describes how h was
// committed, or nil if h+1 was not committed during the run.
func (c *chain) next(h int64) *Event { return c.blocks[h+1] }

// lastCommit returns the block whose LastCommit says who signed h (block
// h+1), or nil when h is not judged: h+1 was not committed during the run,
// or h is beyond the target. The run waits for the block after the
// target and stops; a later block is only there because the run had not
// stopped yet, so nobody was waited for and nothing is counted there.
func (c *chain) lastCommit(h int64) *Event {
	if c.target > 0 && h > c.target {
		return nil
	}
	return c.next(h)
}

// commitRound is the round in which height h was decided. The authoritative
// source is block h+1's LastCommit round (what the chain itself recorded).
// The last height of a run has no h+1 block, so we fall back to the lowest
// round of any node's step "commit" at h: CometBFT reports a node's current
// round there, which is never below the decision round but may be above it
// for a node that had already moved on, so the lowest is the best estimate.
// Without
// either source the round is unknown (ok=false) and the height is left out
// of round statistics rather than guessed as 0.
func (c *chain) commitRound(h int64) (round int32, ok bool) {
	if nb := c.next(h); nb != nil {
		return nb.LastCommitRound, true
	}
	round, ok = c.stepCommit[h]
	return round, ok
}

// intervalMS is the observed time between the commits of h-1 and h: the
// difference of their block events' times, as seen by the run (not header
// times, which CometBFT derives from votes). ok=false when h-1 is missing.
func (c *chain) intervalMS(h int64) (ms float64, ok bool) {
	b, prev := c.blocks[h], c.blocks[h-1]
	if b == nil || prev == nil {
		return 0, false
	}
	return float64(b.Time.Sub(prev.Time).Nanoseconds()) / 1e6, true
}
