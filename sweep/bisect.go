package sweep

import (
	"context"
	"fmt"
	"strings"
)

// Direction says which end of the range a threshold search looks for.
type Direction string

// Directions.
const (
	// Largest: the largest value for which the target holds; it is
	// expected to hold at the range's low end and fail at its high end
	// (a signer's latency).
	Largest Direction = "largest"
	// Smallest: the smallest value for which it holds; expected to fail at
	// the low end and hold at the high end (a timeout long enough).
	Smallest Direction = "smallest"
)

// ParseDirection reads --direction.
func ParseDirection(s string) (Direction, error) {
	switch d := Direction(s); d {
	case Largest, Smallest:
		return d, nil
	}
	return "", fmt.Errorf("--direction %q: want largest or smallest", s)
}

// Verdict is how a threshold search ended.
type Verdict string

// Verdicts (threshold.json's "verdict").
const (
	Found           Verdict = "found"            // an interval no wider than the resolution
	HoldsEverywhere Verdict = "holds-everywhere" // held at both ends of the range
	FailsEverywhere Verdict = "fails-everywhere" // failed at both ends of the range
	NotMonotone     Verdict = "not-monotone"     // a probe contradicted an earlier one
	Incomplete      Verdict = "incomplete"       // interrupted, or a probe could not be done
)

// Probe tells whether the target holds at value v (a Grid value). An
// error means it could not tell (the run could not be done, Ctrl-C).
type Probe func(ctx context.Context, v float64) (held bool, err error)

// Probed is one probe's value and whether the target held there.
type Probed struct {
	Value float64
	Held  bool
}

// Search is what Bisect found.
type Search struct {
	Verdict Verdict
	Probes  []Probed // in the order probed
	// Held and Failed index the probes that bound the threshold for Found:
	// the held value and the failed value next to each other on the grid
	// (Probes[Held].Value < Probes[Failed].Value for Largest, > for
	// Smallest). -1 otherwise.
	Held, Failed int
	// Contradiction, for NotMonotone: the probe and the earlier one it
	// contradicts (indexes into Probes).
	Contradiction [2]int
}

// Bisect searches g for the threshold in direction dir: it probes both
// ends, then halves the grid interval between the nearest held and failed
// value until they are neighbours (at most the resolution apart). It
// assumes nothing it can check: every probe is compared with every earlier
// one, and one that contradicts monotonicity in dir ends the search as
// NotMonotone. Bisection only probes between the nearest held and failed
// values, so within one search only the two ends can contradict each
// other; a function that wiggles between probes goes unseen (a sweep
// shows the whole curve). The search takes at most ⌈log2(steps)⌉+2
// probes.
func Bisect(ctx context.Context, g Grid, dir Direction, probe Probe) (Search, error) {
	s := Search{Held: -1, Failed: -1}
	index := map[int]int{} // grid index -> probe index (each is probed once)
	at := func(i int) (bool, error) {
		held, err := probe(ctx, g.Value(i))
		if err != nil {
			return false, err
		}
		s.Probes = append(s.Probes, Probed{Value: g.Value(i), Held: held})
		index[i] = len(s.Probes) - 1
		if c, ok := contradicted(s.Probes, dir); ok {
			s.Verdict, s.Contradiction = NotMonotone, [2]int{len(s.Probes) - 1, c}
		}
		return held, nil
	}
	incomplete := func(err error) (Search, error) {
		s.Verdict = Incomplete
		return s, err
	}

	// heldEnd is where the target is expected to hold, failEnd where not.
	heldEnd, failEnd := 0, g.Steps()
	if dir == Smallest {
		heldEnd, failEnd = failEnd, heldEnd
	}
	heldAtEnd, err := at(heldEnd)
	if err != nil {
		return incomplete(err)
	}
	heldAtOther, err := at(failEnd)
	if err != nil {
		return incomplete(err)
	}
	switch {
	case s.Verdict == NotMonotone:
		return s, nil
	case heldAtEnd && heldAtOther:
		s.Verdict = HoldsEverywhere
		return s, nil
	case !heldAtEnd && !heldAtOther:
		s.Verdict = FailsEverywhere
		return s, nil
	}
	held, failed := heldEnd, failEnd
	for held-failed > 1 || failed-held > 1 {
		mid := (held + failed) / 2
		ok, err := at(mid)
		if err != nil {
			return incomplete(err)
		}
		if s.Verdict == NotMonotone {
			return s, nil
		}
		if ok {
			held = mid
		} else {
			failed = mid
		}
	}
	s.Verdict, s.Held, s.Failed = Found, index[held], index[failed]
	return s, nil
}

// contradicted reports an earlier probe that the last one contradicts:
// for Largest, a value that held above one that failed; for Smallest, a
// value that held below one that failed.
func contradicted(ps []Probed, dir Direction) (int, bool) {
	last := ps[len(ps)-1]
	for i, p := range ps[:len(ps)-1] {
		if p.Held == last.Held {
			continue
		}
		heldV, failedV := last.Value, p.Value
		if p.Held {
			heldV, failedV = p.Value, last.Value
		}
		if (dir == Largest && heldV > failedV) || (dir == Smallest && heldV < failedV) {
			return i, true
		}
	}
	return 0, false
}

// Describe says in one line what s found, e.g. "holds up to 550ms, fails
// from 600ms".
func (s Search) Describe(g Grid, dir Direction) string {
	f := g.Format
	rng := f(g.Lo) + ".." + f(g.Hi)
	switch s.Verdict {
	case Found:
		h, x := f(s.Probes[s.Held].Value), f(s.Probes[s.Failed].Value)
		if dir == Smallest {
			return fmt.Sprintf("fails up to %s, holds from %s", x, h)
		}
		return fmt.Sprintf("holds up to %s, fails from %s", h, x)
	case HoldsEverywhere:
		return fmt.Sprintf("holds over the whole range %s (held at both ends; no threshold in it)", rng)
	case FailsEverywhere:
		return fmt.Sprintf("fails over the whole range %s (failed at both ends; no threshold in it)", rng)
	case NotMonotone:
		a, b := s.Probes[s.Contradiction[0]], s.Probes[s.Contradiction[1]]
		return fmt.Sprintf("not monotone: %s, %s; no threshold for --direction %s%s",
			heldText(f, a), heldText(f, b), dir, hint(s, dir))
	}
	probed := make([]string, len(s.Probes))
	for i, p := range s.Probes {
		probed[i] = heldText(f, p)
	}
	if len(probed) == 0 {
		return "incomplete: no probe finished"
	}
	return "incomplete: " + strings.Join(probed, ", ")
}

func heldText(f func(float64) string, p Probed) string {
	if p.Held {
		return "held at " + f(p.Value)
	}
	return "failed at " + f(p.Value)
}

// hint suggests the other direction when the contradiction is the range's
// two ends the other way round (the first two probes).
func hint(s Search, dir Direction) string {
	if s.Contradiction != [2]int{1, 0} {
		return ""
	}
	other := Smallest
	if dir == Smallest {
		other = Largest
	}
	return fmt.Sprintf(" (did you mean --direction %s?)", other)
}
