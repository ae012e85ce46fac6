package calibrate

import (
	"context"
	"fmt"
	"math"
	"time"
)

// The fitted parameters: the gossip routines' effective sleep (CometBFT's
// peer_gossip_sleep_duration is 100ms; the real wait is shorter when other
// traffic wakes a routine) and a vote's processing. The search starts on
// a coarse grid around CometBFT's defaults and then walks (a compass
// search: a step each way on each axis, kept when better) as far as the
// objective leads, within
// these bounds, its steps growing while they find better points and
// shrinking when they do not; it never stops at the edge of a grid.
var (
	startSleeps = []time.Duration{50 * time.Millisecond, 75 * time.Millisecond, 100 * time.Millisecond, 125 * time.Millisecond}
	startVotes  = []time.Duration{0, 100 * time.Microsecond, 400 * time.Microsecond, 1600 * time.Microsecond}
	fitBounds   = bounds{sleep: [2]time.Duration{time.Millisecond, 2 * time.Second}, vote: [2]time.Duration{0, 50 * time.Millisecond}}
	// The first steps and the smallest: a finer step than these changes
	// the sim's figures less than a real run's noise.
	firstStep = [2]time.Duration{20 * time.Millisecond, 200 * time.Microsecond}
	lastStep  = [2]time.Duration{time.Millisecond, 10 * time.Microsecond}
)

type bounds struct{ sleep, vote [2]time.Duration }

func (b bounds) String() string {
	return fmt.Sprintf("gossip_sleep %v..%v, vote_cost %v..%v", b.sleep[0], b.sleep[1], b.vote[0], b.vote[1])
}

func clamp(v time.Duration, r [2]time.Duration) time.Duration { return min(max(v, r[0]), r[1]) }

// fitPoint is where the search ended.
type fitPoint struct {
	GossipSleep, VoteCost time.Duration
	Error                 float64
	AtBound               bool // on a bound of fitBounds
	Tried                 int  // objective evaluations
}

// searchFit minimises f over (gossip sleep, vote cost). It is the whole
// search, so tests drive it with a formula instead of sim runs.
func searchFit(ctx context.Context, f func(sleep, vote time.Duration) (float64, error)) (fitPoint, error) {
	seen := map[[2]time.Duration]float64{}
	best := fitPoint{Error: math.Inf(1)}
	try := func(sleep, vote time.Duration) (float64, error) {
		k := [2]time.Duration{sleep, vote}
		if e, ok := seen[k]; ok {
			return e, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		e, err := f(sleep, vote)
		if err != nil {
			return 0, err
		}
		seen[k] = e
		if e < best.Error {
			best.GossipSleep, best.VoteCost, best.Error = sleep, vote, e
		}
		return e, nil
	}
	for _, s := range startSleeps {
		for _, v := range startVotes {
			if _, err := try(s, v); err != nil {
				return fitPoint{}, err
			}
		}
	}
	// Per axis: a step that finds a better point doubles (so a far
	// optimum is reached in a few moves), one that does not halves.
	step := firstStep
	for step[0] >= lastStep[0] || step[1] >= lastStep[1] {
		for axis := range 2 {
			if step[axis] < lastStep[axis] {
				continue
			}
			moved := false
			for _, sign := range []time.Duration{1, -1} {
				s, v := best.GossipSleep, best.VoteCost
				if axis == 0 {
					s = clamp(s+sign*step[0], fitBounds.sleep)
				} else {
					v = clamp(v+sign*step[1], fitBounds.vote)
				}
				before := best
				if _, err := try(s, v); err != nil {
					return fitPoint{}, err
				}
				if best != before {
					moved = true
					break
				}
			}
			if moved {
				step[axis] *= 2
			} else {
				step[axis] /= 2
			}
		}
	}
	best.Tried = len(seen)
	best.AtBound = best.GossipSleep == fitBounds.sleep[0] || best.GossipSleep == fitBounds.sleep[1] || best.VoteCost == fitBounds.vote[1]
	return best, nil
}
