package results

import (
	"github.com/valnet/valnet/results/eventlog"
	"time"
)

// stallText explains, while the run goes, a stretch without a commit that
// began at since and has lasted bound, the halt threshold, the way the
// summary explains a halt (explainHalt, from the evidence up to
// since+bound): events are the stream since the last commit (with
// run_start and the faults), lastHeight the last committed height (0:
// none yet). For example "no height committed for 12.5s after the network
// started; likely cause network: no node received +2/3 prevotes at h1 r0:
// … no peers connected".
func stallText(events []eventlog.Event, lastHeight int64, since time.Time, bound time.Duration) string {
	z := indexOf(events)
	sp := haltSpan{Halt: Halt{FromHeight: lastHeight, DurationMS: bound.Milliseconds()}, from: since, to: since.Add(bound)}
	h := z.x.explainHalt(z.c, z.x.heights[lastHeight+1], sp, bound)
	return haltWhere(h) + "; likely cause " + h.Cause + ": " + h.Detail
}

// indexOf indexes events whole: nothing judged, nothing dropped, every
// unanswered request a signature in flight.
func indexOf(events []eventlog.Event) *Summarizer {
	p := defaultPlan()
	p.keepAll = true
	z := newSummarizer(p)
	feedEvents(events)(z)
	for _, h := range z.x.order {
		z.x.resolve(z.x.heights[h])
	}
	z.c.done()
	return z
}

// newChain and newIndex index events whole (for tests of one analysis).
func newChain(events []eventlog.Event) *chain { return indexOf(events).c }

func newIndex(events []eventlog.Event, _ *eventlog.Event) *index { return indexOf(events).x }

func runStartOf(events []eventlog.Event) *eventlog.Event {
	for i := range events {
		if events[i].Kind == eventlog.KindRunStart {
			return &events[i]
		}
	}
	return nil
}
