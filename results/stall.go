package results

import "time"

// stallText explains, while the run goes, a stretch without a commit that
// began at since and has lasted bound, the halt threshold, the way the
// summary explains a halt (explainHalt, from the evidence up to
// since+bound): events are the stream since the last commit (with
// run_start and the faults), lastHeight the last committed height (0:
// none yet). For example "no height committed for 12.5s after the network
// started; likely cause network: no node received +2/3 prevotes at h1 r0:
// … no peers connected".
func stallText(events []Event, lastHeight int64, since time.Time, bound time.Duration) string {
	c := newChain(events)
	x := newIndex(events, runStartOf(events))
	sp := haltSpan{Halt: Halt{FromHeight: lastHeight, DurationMS: bound.Milliseconds()}, from: since, to: since.Add(bound)}
	h := x.explainHalt(c, sp, bound)
	return haltWhere(h) + "; likely cause " + h.Cause + ": " + h.Detail
}
